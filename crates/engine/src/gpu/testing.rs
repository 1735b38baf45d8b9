//! Runs one kernel on given inputs: how each kernel is compared with its CPU
//! twin. Public so the integration tests (and anyone checking a new adapter)
//! can use it.

use crate::error::Result;
use crate::gpu::ops::SLOT;
use crate::gpu::readback::{buffer, read_f32, upload};
use crate::gpu::{GpuContext, Pipelines};
use crate::kernels::Kernel;
use crate::storage::format::SCALES_BINDING;

/// Uploads `buffers` as bindings 1.., `params` as binding 0, `scales` (a
/// weight matrix's, in the formats that have them) at [`SCALES_BINDING`], dispatches
/// `kernel` once with `groups`, and returns every buffer's contents afterwards
/// as f32 (u32 inputs come back reinterpreted; callers read only outputs).
pub async fn run_kernel(
    ctx: &GpuContext,
    pipelines: &Pipelines,
    kernel: Kernel,
    params: &[u8],
    buffers: &[&[u8]],
    scales: Option<&[u8]>,
    groups: [u32; 3],
) -> Result<Vec<Vec<f32>>> {
    let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    let params_buf = buffer(ctx, "params", SLOT, uniform);
    ctx.queue.write_buffer(&params_buf, 0, params);
    let gpu_bufs: Vec<_> = buffers.iter().map(|b| upload(ctx, "test input", b)).collect();
    let layout = pipelines.get(kernel).get_bind_group_layout(0);
    let mut entries =
        vec![wgpu::BindGroupEntry { binding: 0, resource: params_buf.as_entire_binding() }];
    for (i, b) in gpu_bufs.iter().enumerate() {
        entries
            .push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() });
    }
    let scales_buf = scales.map(|s| upload(ctx, "test scales", s));
    if let Some(b) = &scales_buf {
        entries.push(wgpu::BindGroupEntry {
            binding: SCALES_BINDING,
            resource: b.as_entire_binding(),
        });
    }
    let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &entries,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipelines.get(kernel));
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    }
    let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    let stagings: Vec<_> = gpu_bufs
        .iter()
        .map(|b| {
            let s = buffer(ctx, "test readback", b.size(), read);
            enc.copy_buffer_to_buffer(b, 0, &s, 0, b.size());
            s
        })
        .collect();
    ctx.queue.submit([enc.finish()]);
    let mut out = Vec::new();
    for (s, b) in stagings.iter().zip(buffers) {
        out.push(read_f32(ctx, s, b.len().max(4) as u64).await?);
    }
    // Freed now, not when the browser's garbage collector runs (the self-test
    // makes hundreds of these on a visitor's GPU).
    let all = gpu_bufs.iter().chain(&stagings).chain(&scales_buf).chain([&params_buf]);
    all.for_each(wgpu::Buffer::destroy);
    Ok(out)
}

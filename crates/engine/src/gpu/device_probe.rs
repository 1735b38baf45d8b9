//! Two figures of the GPU itself, for the batching lesson's decomposition of
//! a decode step: how fast it copies memory (about the best rate at which a
//! step can stream its weights), and what one more dispatch in a compute
//! pass costs (the part of a step that grows with its dispatch count, not
//! its bytes). Wall times of submitted work, waited for by a 4-byte readback;
//! each the median of a few runs.

use crate::error::Result;
use crate::gpu::plan::{bind, SLOT};
use crate::gpu::readback::{buffer, read_f32, upload, STORAGE};
use crate::gpu::GpuModel;
use crate::kernels::{residual_add, Kernel};
use crate::step::DeviceFigures;

/// Bytes copied per run of the copy test (less where the device's buffers are smaller).
const COPY_BYTES: u64 = 64 << 20;
/// Dispatches in the long pass of the dispatch test (the short one has one).
const DISPATCHES: u32 = 256;
/// Runs of each test; the figure is their median.
const RUNS: usize = 5;

/// Measures the copy rate and the per-dispatch cost on `gpu`'s device.
pub async fn measure(gpu: &GpuModel) -> Result<DeviceFigures> {
    let ctx = &gpu.ctx;
    let limit = ctx.limits.max_buffer_size.min(ctx.limits.max_storage_buffer_binding_size);
    let bytes = COPY_BYTES.min(limit) / 4 * 4;
    let (src, dst) =
        (buffer(ctx, "probe src", bytes, STORAGE), buffer(ctx, "probe dst", bytes, STORAGE));
    let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    let staging = buffer(ctx, "probe staging", 4, read);
    // The pass's one-element residual add, its parameters and bind group.
    let params = residual_add::Params { n: 1, _pad0: 0, _pad1: 0, _pad2: 0 };
    let mut slot = vec![0u8; SLOT as usize];
    slot[..16].copy_from_slice(bytemuck::bytes_of(&params));
    let uniform = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe params"),
        size: SLOT,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&uniform, 0, &slot);
    let (y, x) = (upload(ctx, "probe y", &[0; 4]), upload(ctx, "probe x", &[0; 4]));
    let group = bind(gpu, Kernel::ResidualAdd, &uniform, 0, &[&y, &x], None);
    let (pipeline, group) = (gpu.pipelines.get(Kernel::ResidualAdd), &group);
    let pass = |n: u32| {
        move |enc: &mut wgpu::CommandEncoder| {
            let mut cpass = enc.begin_compute_pass(&Default::default());
            cpass.set_pipeline(pipeline);
            cpass.set_bind_group(0, group, &[]);
            for _ in 0..n {
                cpass.dispatch_workgroups(1, 1, 1);
            }
        }
    };
    let (mut copy, mut one, mut many) = (Vec::new(), Vec::new(), Vec::new());
    let wait = (&dst, &staging);
    for run in 0..=RUNS {
        let c = timed(gpu, wait, |enc| enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes)).await?;
        let a = timed(gpu, wait, pass(1)).await?;
        let b = timed(gpu, wait, pass(DISPATCHES)).await?;
        // Run 0 warms up (first use of the buffers and the pipeline).
        if run > 0 {
            copy.push(c);
            one.push(a);
            many.push(b);
        }
    }
    let median = |v: &[f64]| crate::cost::median(v).unwrap_or(f64::NAN);
    let (copy_ms, one_ms, many_ms) = (median(&copy), median(&one), median(&many));
    for b in [&src, &dst, &staging, &uniform, &y, &x] {
        b.destroy();
    }
    Ok(DeviceFigures {
        copy_bytes_per_s: bytes as f64 / (copy_ms.max(1e-6) / 1e3),
        dispatch_ms: Some(((many_ms - one_ms) / f64::from(DISPATCHES - 1)).max(0.0)),
    })
}

/// Wall milliseconds of the work `encode` records, submitted and waited for
/// (4 bytes of `wait.0` read back through `wait.1`).
async fn timed(
    gpu: &GpuModel,
    wait: (&wgpu::Buffer, &wgpu::Buffer),
    encode: impl FnOnce(&mut wgpu::CommandEncoder),
) -> Result<f64> {
    let ctx = &gpu.ctx;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    encode(&mut enc);
    enc.copy_buffer_to_buffer(wait.0, 0, wait.1, 0, 4);
    let start = web_time::Instant::now();
    ctx.queue.submit([enc.finish()]);
    read_f32(ctx, wait.1, 4).await?;
    Ok(start.elapsed().as_secs_f64() * 1e3)
}

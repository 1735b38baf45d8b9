//! The attention weights on request: after a probed prefill has copied each
//! block's `qkv` out (see `probe.rs`) and the KV cache holds every key, one
//! more submit runs `attention_probs` once per layer over those copies and
//! reads the weights back. Its buffers and bind groups live for this call
//! only: nothing here touches the decode loop.

use crate::error::Result;
use crate::gpu::ops::{PARAMS, SLOT};
use crate::gpu::probe::Tap;
use crate::gpu::readback::{buffer, read_f32, STORAGE};
use crate::gpu::{GpuContext, GpuModel};
use crate::kernels::{attention_probs, At, Kernel, Launch};

/// The weights `(n_layer, n_head, n_rows, pos0 + n_rows)` of the `n_rows`
/// queries whose `qkv` the tap copied, over the keys in `key_cache`.
pub async fn attention(
    gpu: &GpuModel,
    key_cache: &[wgpu::Buffer], // (n_layer) × (n_positions, n_embd)
    qkv: &Tap,                  // (n_layer) × stride: (n_rows, n_embd + 2 * kv_dim)
    n_rows: usize,
    pos0: usize,
) -> Result<Vec<f32>> {
    let (ctx, c) = (&gpu.ctx, gpu.config());
    let (n_layer, n_head, n_cols) = (c.n_layer, c.n_head, pos0 + n_rows);
    let per = (n_head * n_rows * n_cols * 4) as u64;
    let stride = per.next_multiple_of(u64::from(ctx.limits.min_storage_buffer_offset_alignment));
    ctx.check_binding("the attention weights of every layer", stride * n_layer as u64)?;
    ctx.check_groups("attention weights (query rows)", n_rows as u32)?;
    let probs = buffer(ctx, "attention probs", stride * n_layer as u64, STORAGE); // (n_layer) × stride
    let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    let staging = buffer(ctx, "attention probs staging", stride * n_layer as u64, read);
    let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    let params = buffer(ctx, "attention probs params", SLOT * n_layer as u64, uniform);
    let layout = gpu.pipelines.get(Kernel::AttentionProbs).get_bind_group_layout(0);
    let qkv_bytes = (n_rows * c.qkv_width() * 4) as u64;
    let mut groups = Vec::with_capacity(n_layer);
    let rows = At { keys0: pos0 as u32, ..At::rows(c, n_rows as u32) };
    let mut workgroups = [0; 3];
    for (l, keys) in key_cache.iter().enumerate() {
        let l64 = l as u64;
        let shape = attention_probs::Shape { scale: c.attn_scale(l) };
        let p = shape.params(&rows);
        workgroups = shape.workgroups(&p, gpu.model.format());
        ctx.queue.write_buffer(&params, l64 * SLOT, bytemuck::bytes_of(&p));
        let ranges = [
            (&params, l64 * SLOT, PARAMS as u64),
            (&qkv.dest, l64 * qkv.stride, qkv_bytes),
            (keys, 0, keys.size()),
            (&probs, l64 * stride, per),
        ];
        groups.push(bind_ranges(ctx, &layout, ranges));
    }
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(gpu.pipelines.get(Kernel::AttentionProbs));
        let [x, y, z] = workgroups;
        for group in &groups {
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(x, y, z);
        }
    }
    enc.copy_buffer_to_buffer(&probs, 0, &staging, 0, stride * n_layer as u64);
    ctx.queue.submit([enc.finish()]);
    let all = read_f32(ctx, &staging, stride * n_layer as u64).await;
    for b in [&probs, &staging, &params] {
        b.destroy();
    }
    let (stride, per) = ((stride / 4) as usize, (per / 4) as usize);
    Ok(all?.chunks(stride).flat_map(|layer| &layer[..per]).copied().collect())
}

/// attention_probs's bind group: params, the layer's `qkv` copy, its key
/// cache and its share of the weights, each a (buffer, offset, size) range.
fn bind_ranges(
    ctx: &GpuContext,
    layout: &wgpu::BindGroupLayout,
    ranges: [(&wgpu::Buffer, u64, u64); 4],
) -> wgpu::BindGroup {
    let entries = ranges.map(|(buffer, offset, size)| wgpu::BufferBinding {
        buffer,
        offset,
        size: wgpu::BufferSize::new(size),
    });
    let entries: Vec<wgpu::BindGroupEntry> = (0u32..)
        .zip(entries)
        .map(|(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: wgpu::BindingResource::Buffer(b),
        })
        .collect();
    let desc =
        wgpu::BindGroupDescriptor { label: Some("attention probs"), layout, entries: &entries };
    ctx.device.create_bind_group(&desc)
}

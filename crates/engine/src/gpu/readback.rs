//! Buffers and the one async step of the engine: reading results back.
//! Natively `poll` drives the map to completion; in the browser the map
//! callback fires from the event loop and `poll` does nothing.

use wgpu::util::DeviceExt;

use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;

/// Usage of every storage buffer: bound to kernels, filled by uploads and
/// copies, copied from (forking, tests).
pub const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// A storage buffer holding `data`.
pub fn upload(ctx: &GpuContext, label: &str, data: &[u8]) -> wgpu::Buffer {
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: data,
        usage: STORAGE,
    })
}

/// An uninitialised buffer of `bytes` (at least 4, as zero-sized bindings are invalid).
pub fn buffer(
    ctx: &GpuContext,
    label: &str,
    bytes: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).next_multiple_of(4),
        usage,
        mapped_at_creation: false,
    })
}

/// Maps the first `bytes` of a MAP_READ buffer and copies them out as f32.
pub async fn read_f32(ctx: &GpuContext, staging: &wgpu::Buffer, bytes: u64) -> Result<Vec<f32>> {
    Ok(read_timed(ctx, staging, bytes).await?.0)
}

/// [`read_f32`], with the milliseconds spent waiting for the buffer to map
/// (the GPU finishing the work before it) and copying it out.
pub async fn read_timed(
    ctx: &GpuContext,
    staging: &wgpu::Buffer,
    bytes: u64,
) -> Result<(Vec<f32>, f64, f64)> {
    let start = web_time::Instant::now();
    let (tx, rx) = futures_channel::oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| EngineError::Gpu(format!("waiting for the GPU failed: {e}")))?;
    rx.await
        .map_err(|_| EngineError::Gpu("the GPU device was lost during a readback".into()))?
        .map_err(|e| EngineError::Gpu(format!("reading results back failed: {e}")))?;
    let mapped = web_time::Instant::now();
    let values = {
        let view = staging
            .get_mapped_range(0..bytes)
            .map_err(|e| EngineError::Gpu(format!("reading results back failed: {e}")))?;
        bytemuck::pod_collect_to_vec::<u8, f32>(&view)
    };
    staging.unmap();
    let ms = |a: web_time::Instant, b: web_time::Instant| (b - a).as_secs_f64() * 1e3;
    Ok((values, ms(start, mapped), ms(mapped, web_time::Instant::now())))
}

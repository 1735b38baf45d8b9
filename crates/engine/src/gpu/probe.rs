//! The residual stream read out of a pass, on request (the logit lens): the
//! embedding and every block's output, copied from the scratch `x` between
//! compute passes into one buffer and read back with the logits. Only a
//! probed prefill pays for it; decode steps and plain prefills never do.

use crate::error::Result;
use crate::gpu::readback::{buffer, read_f32};
use crate::gpu::GpuContext;

/// The copies of one probed pass.
pub struct Probe {
    residuals: wgpu::Buffer, // (n_layer + 1, rows, n_embd)
    staging: wgpu::Buffer,   // (n_layer + 1, rows, n_embd), mappable
    /// Bytes of one copy: `rows · n_embd · 4`.
    per_copy: u64,
    copies: u64,
}

impl Probe {
    /// Room for `copies` copies of `rows` rows of `n_embd`.
    pub fn new(ctx: &GpuContext, copies: usize, rows: usize, n_embd: usize) -> Result<Probe> {
        let per_copy = (rows * n_embd * 4) as u64;
        let bytes = per_copy * copies as u64;
        ctx.check_binding("the residual stream of every layer", bytes)?;
        let usage = wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        Ok(Probe {
            residuals: buffer(ctx, "residuals", bytes, usage),
            staging: buffer(ctx, "residuals staging", bytes, read),
            per_copy,
            copies: copies as u64,
        })
    }

    /// Copy `k`: the rows of `x` as they are now (between two compute passes).
    pub fn copy(&self, enc: &mut wgpu::CommandEncoder, k: usize, x: &wgpu::Buffer) {
        enc.copy_buffer_to_buffer(x, 0, &self.residuals, k as u64 * self.per_copy, self.per_copy);
    }

    /// After the last pass: every copy into the mappable buffer.
    pub fn finish(&self, enc: &mut wgpu::CommandEncoder) {
        let bytes = self.per_copy * self.copies;
        enc.copy_buffer_to_buffer(&self.residuals, 0, &self.staging, 0, bytes);
    }

    /// Bytes read back.
    pub fn bytes(&self) -> usize {
        (self.per_copy * self.copies) as usize
    }

    /// The copies, `(copies, rows, n_embd)` flattened, once the submit is done.
    pub async fn read(&self, ctx: &GpuContext) -> Result<Vec<f32>> {
        read_f32(ctx, &self.staging, self.per_copy * self.copies).await
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.residuals.destroy();
        self.staging.destroy();
    }
}

//! Scratch buffers read out of a pass, on request (the logit lens, the
//! attention views): a probed prefill runs one compute pass per block, and
//! between passes each tap copies a scratch buffer (the residual stream `x`,
//! or the block's `qkv`) into a buffer of its own, read back after the
//! logits. Only a probed prefill pays for it; decode steps and plain prefills
//! never do.

use crate::error::Result;
use crate::gpu::model::Scratch;
use crate::gpu::readback::{buffer, read_f32};
use crate::gpu::GpuContext;

/// Which scratch buffer a tap copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The residual stream: after the embedding and after each block.
    X,
    /// Each block's queries, keys and values (from the block's end on it is
    /// not overwritten until the next block's QKV projection).
    Qkv,
}

/// One scratch buffer's copies: `copies` of `per_copy` bytes, `stride` apart
/// (a multiple of the storage offset alignment, so each copy can be bound).
pub struct Tap {
    source: Source,
    /// The first cut (0: after the embedding; l + 1: after block l) it copies at.
    first_cut: usize,
    copies: usize,
    per_copy: u64,
    pub stride: u64,
    pub dest: wgpu::Buffer, // (copies) × stride bytes
    staging: wgpu::Buffer,  // the same, mappable
}

/// The taps of one probed pass.
#[derive(Default)]
pub struct Probe {
    pub taps: Vec<Tap>,
}

impl Probe {
    /// Adds a tap copying `per_copy` bytes of `source` at `copies` cuts from
    /// `first_cut` on; returns its index.
    pub fn tap(
        &mut self,
        ctx: &GpuContext,
        source: Source,
        (first_cut, copies): (usize, usize),
        per_copy: u64,
    ) -> Result<usize> {
        let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment);
        let stride = per_copy.next_multiple_of(align);
        let bytes = stride * copies as u64;
        ctx.check_binding("the copies of one probed pass", bytes)?;
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        self.taps.push(Tap {
            source,
            first_cut,
            copies,
            per_copy,
            stride,
            dest: buffer(ctx, "probe", bytes, usage),
            staging: buffer(ctx, "probe staging", bytes, read),
        });
        Ok(self.taps.len() - 1)
    }

    /// At cut `k` (between two compute passes): every tap due there copies.
    pub fn copy(&self, enc: &mut wgpu::CommandEncoder, k: usize, scratch: &Scratch) {
        for t in &self.taps {
            let Some(i) = k.checked_sub(t.first_cut).filter(|&i| i < t.copies) else { continue };
            let source = match t.source {
                Source::X => &scratch.x,
                Source::Qkv => &scratch.qkv,
            };
            enc.copy_buffer_to_buffer(source, 0, &t.dest, i as u64 * t.stride, t.per_copy);
        }
    }

    /// After the last pass: every tap into its mappable buffer.
    pub fn finish(&self, enc: &mut wgpu::CommandEncoder) {
        for t in &self.taps {
            enc.copy_buffer_to_buffer(&t.dest, 0, &t.staging, 0, t.stride * t.copies as u64);
        }
    }

    /// Tap `i`'s copies, `(copies, per_copy / 4)` floats, once the submit is done.
    pub async fn read(&self, ctx: &GpuContext, i: usize) -> Result<Vec<f32>> {
        let t = &self.taps[i];
        let all = read_f32(ctx, &t.staging, t.stride * t.copies as u64).await?;
        let (stride, per) = ((t.stride / 4) as usize, (t.per_copy / 4) as usize);
        Ok(all.chunks(stride).flat_map(|c| &c[..per]).copied().collect())
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.dest.destroy();
        self.staging.destroy();
    }
}

//! GPU time of a step from timestamp queries, where the adapter offers them
//! (`wgpu::Features::TIMESTAMP_QUERY`; browsers may round to 100 µs): the
//! device writes a timestamp as the step's compute pass begins and one as it
//! ends, and the two come back with the logits. Wall time also counts the
//! submit, the wait and the readback; the difference is the step's overhead.

use futures_channel::oneshot;

use crate::error::{EngineError, Result};
use crate::gpu::readback::buffer;
use crate::gpu::GpuContext;

/// Two u64 timestamps: a pass's beginning and end.
const BYTES: u64 = 16;

/// A session's timestamp query set and the buffers its values pass through.
pub struct Timer {
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer, // (spans, 2) u64 ticks, written by resolve_query_set
    staging: wgpu::Buffer,  // (spans, 2) u64 ticks, mappable
    /// Nanoseconds per tick.
    period_ns: f64,
    /// Timed spans: a beginning and an end each.
    spans: u32,
}

/// A readback of the timestamps in flight.
pub type Pending = oneshot::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>;

impl Timer {
    /// A timer of one span (a step), or `None` when the device was opened
    /// without timestamp queries.
    pub fn new(ctx: &GpuContext) -> Option<Timer> {
        Timer::spans(ctx, 1)
    }

    /// A timer of `spans` spans (the bench's one pass per kernel), or `None`
    /// without timestamp queries.
    pub fn spans(ctx: &GpuContext, spans: u32) -> Option<Timer> {
        if !ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) || spans == 0 {
            return None;
        }
        let queries = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("step timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * spans,
        });
        let resolve = wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC;
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let bytes = BYTES * u64::from(spans);
        Some(Timer {
            queries,
            resolved: buffer(ctx, "timestamps", bytes, resolve),
            staging: buffer(ctx, "timestamps staging", bytes, read),
            period_ns: f64::from(ctx.queue.get_timestamp_period()),
            spans,
        })
    }

    /// Where a compute pass timed as span `i` writes its beginning and end.
    pub fn span(&self, i: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        }
    }

    /// Where a compute pass writes its timestamps: the step's first pass
    /// its beginning, the last its end (a step is one pass unless probed).
    pub fn writes(&self, first: bool, last: bool) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: first.then_some(0),
            end_of_pass_write_index: last.then_some(1),
        }
    }

    /// After the pass: the timestamps into a buffer the CPU can map.
    pub fn resolve(&self, enc: &mut wgpu::CommandEncoder) {
        enc.resolve_query_set(&self.queries, 0..2 * self.spans, &self.resolved, 0);
        enc.copy_buffer_to_buffer(&self.resolved, 0, &self.staging, 0, self.bytes());
    }

    fn bytes(&self) -> u64 {
        BYTES * u64::from(self.spans)
    }

    /// Starts mapping the timestamps (after the submit, before the logits'
    /// readback waits, so one wait serves both).
    pub fn map(&self) -> Pending {
        let (tx, rx) = oneshot::channel();
        self.staging.map_async(wgpu::MapMode::Read, 0..self.bytes(), move |r| {
            let _ = tx.send(r);
        });
        rx
    }

    /// The pass's GPU time in milliseconds, once `pending` completes.
    pub async fn finish(&self, pending: Pending) -> Result<f64> {
        Ok(self.finish_spans(pending).await?[0])
    }

    /// Each span's GPU time in milliseconds, once `pending` completes.
    pub async fn finish_spans(&self, pending: Pending) -> Result<Vec<f64>> {
        pending
            .await
            .map_err(|_| EngineError::Gpu("the GPU device was lost during a readback".into()))?
            .map_err(|e| EngineError::Gpu(format!("reading timestamps back failed: {e}")))?;
        let ticks: Vec<u64> = {
            let view = self
                .staging
                .get_mapped_range(0..self.bytes())
                .map_err(|e| EngineError::Gpu(format!("reading timestamps back failed: {e}")))?;
            bytemuck::pod_collect_to_vec::<u8, u64>(&view)
        };
        self.staging.unmap();
        let ms = |t: &[u64]| t[1].saturating_sub(t[0]) as f64 * self.period_ns / 1e6;
        Ok(ticks.chunks_exact(2).map(ms).collect())
    }

    /// Bytes read back per step for the timestamps.
    pub const BYTES: usize = BYTES as usize;
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.resolved.destroy();
        self.staging.destroy();
    }
}

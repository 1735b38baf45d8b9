//! Figures of the GPU itself, for the cost lessons and the bench: how fast it
//! reads memory (`block_sum` over a buffer several times larger than its
//! last-level cache: the best rate at which a decode step can stream its
//! weights), how fast it copies (a copy also writes every byte, so it is not
//! the read rate; several large copies in one submission, less the round
//! trip of an empty one, since a copy has no timestamps of its own), and what
//! one more dispatch in a compute pass costs (the part of a step that grows
//! with its dispatch count, not its bytes). Times are the device's own
//! (timestamp queries) where it has them, else wall times of submitted work
//! waited for by a 4-byte readback; each figure the median of a few runs.

use crate::error::Result;
use crate::gpu::ops::{bind, SLOT};
use crate::gpu::profile::is_software;
use crate::gpu::readback::{buffer, read_f32, upload, STORAGE};
use crate::gpu::timer::Timer;
use crate::gpu::{GpuContext, GpuModel};
use crate::kernels::{block_sum, residual_add, At, Kernel, Launch};
use crate::step::DeviceFigures;

/// Bytes read per run of the read test on a real GPU: ten times an H100's
/// 50 MB L2 and eight times an H200's 60 MB, so the cache cannot serve it
/// (less where buffers are smaller).
const READ_BYTES: u64 = 512 << 20;
/// The same on a software adapter (a CPU's caches are smaller, its memory slower).
const READ_BYTES_SOFTWARE: u64 = 64 << 20;
/// Bytes of each copy of the copy test, and copies per run: 1 GiB copied
/// on a real GPU, so the round trip subtracted is a small part of the time.
const COPY_BYTES: u64 = 256 << 20;
const COPIES: u32 = 4;
/// The same on a software adapter.
const COPY_BYTES_SOFTWARE: u64 = 64 << 20;
const COPIES_SOFTWARE: u32 = 1;
/// Words (16 bytes) each workgroup of the read test sums on a real GPU
/// (64 KB: thousands of workgroups to fill the device).
const WORDS_PER_GROUP: u64 = 1 << 12;
/// The same on a software adapter, whose invocations run in turn and whose
/// barriers are costly: 1 MB a workgroup, so the reads, not the workgroup's
/// tree of barriers, take the time (at 64 KB SwiftShader read at a tenth of
/// its rate).
const WORDS_PER_GROUP_SOFTWARE: u64 = 1 << 16;
/// Dispatches in the long pass of the dispatch test (the short one has one).
const DISPATCHES: u32 = 256;
/// Runs of each test; the figure is their median.
const RUNS: usize = 5;

/// Measures the read rate, the copy rate and the per-dispatch cost on `gpu`'s device.
pub async fn measure(gpu: &GpuModel) -> Result<DeviceFigures> {
    let ctx = &gpu.ctx;
    let (read_bytes, per_group, copy_bytes, n_copies) = sizes(ctx);
    let data = buffer(ctx, "probe data", read_bytes, STORAGE);
    let words = read_bytes / 16;
    let groups = words.div_ceil(per_group).min(u64::from(crate::kernels::MAX_GROUPS_PER_DIM));
    let block_sum =
        block_sum::Shape { words: words as u32, per_group: words.div_ceil(groups) as u32 };
    let sums = buffer(ctx, "probe sums", 4 * groups, STORAGE);
    let (src, dst) = (
        buffer(ctx, "probe src", copy_bytes, STORAGE),
        buffer(ctx, "probe dst", copy_bytes, STORAGE),
    );
    let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    let staging = buffer(ctx, "probe staging", 4, read);
    let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    let params = buffer(ctx, "probe params", 2 * SLOT, uniform);
    // Slot 0: block_sum's parameters; slot 1: a one-element residual add's.
    ctx.queue.write_buffer(&params, 0, bytemuck::bytes_of(&block_sum.params()));
    let add = residual_add::Shape { cols: 1 }.params(&At::rows(&gpu.model.config, 1));
    ctx.queue.write_buffer(&params, SLOT, bytemuck::bytes_of(&add));
    let (y, x) = (upload(ctx, "probe y", &[0; 4]), upload(ctx, "probe x", &[0; 4]));
    let sum_group = bind(gpu, Kernel::BlockSum, &params, 0, &[&data, &sums], None);
    let add_group = bind(gpu, Kernel::ResidualAdd, &params, 1, &[&y, &x], None);
    let timer = Timer::new(ctx);
    let (sum_pipeline, add_pipeline) =
        (gpu.pipelines.get(Kernel::BlockSum), gpu.pipelines.get(Kernel::ResidualAdd));
    let sum = Dispatches {
        pipeline: sum_pipeline,
        group: &sum_group,
        groups: block_sum.workgroups(),
        n: 1,
    };
    let one = Dispatches { pipeline: add_pipeline, group: &add_group, groups: [1, 1, 1], n: 1 };
    let many = Dispatches { n: DISPATCHES, ..one };
    // (runs) of each test: the read, the copies, one dispatch, many.
    let mut times: [Vec<f64>; 4] = Default::default();
    let wait = (&dst, &staging);
    for run in 0..=RUNS {
        let r = timed(gpu, wait, timer.as_ref(), |enc, t| sum.encode(enc, t)).await?;
        let copy = |enc: &mut wgpu::CommandEncoder, _: Option<&Timer>| {
            for _ in 0..n_copies {
                enc.copy_buffer_to_buffer(&src, 0, &dst, 0, copy_bytes);
            }
        };
        let c = timed(gpu, wait, None, copy).await?;
        let a = timed(gpu, wait, None, |enc, t| one.encode(enc, t)).await?;
        let b = timed(gpu, wait, None, |enc, t| many.encode(enc, t)).await?;
        // Run 0 warms up (first use of the buffers and the pipelines).
        if run > 0 {
            times.iter_mut().zip([r, c, a, b]).for_each(|(all, t)| all.push(t));
        }
    }
    for b in [&data, &sums, &src, &dst, &staging, &params, &y, &x] {
        b.destroy();
    }
    let copied = copy_bytes * u64::from(n_copies);
    Ok(figures(times.each_ref().map(Vec::as_slice), read_bytes, copied))
}

/// The read test's bytes and words per workgroup, and the copy test's bytes
/// per copy and copies, on this adapter (within its largest binding).
fn sizes(ctx: &GpuContext) -> (u64, u64, u64, u32) {
    let limit = ctx.max_binding();
    let (read_cap, per_group, copy_cap, n_copies) = match is_software(&ctx.adapter_info) {
        true => {
            (READ_BYTES_SOFTWARE, WORDS_PER_GROUP_SOFTWARE, COPY_BYTES_SOFTWARE, COPIES_SOFTWARE)
        }
        false => (READ_BYTES, WORDS_PER_GROUP, COPY_BYTES, COPIES),
    };
    (read_cap.min(limit) / 16 * 16, per_group, copy_cap.min(limit) / 4 * 4, n_copies)
}

/// The figures from each test's times (ms): the read, the copies, one
/// tiny dispatch and [`DISPATCHES`] of them, each the median of its runs.
fn figures(
    [reads, copies, ones, manys]: [&[f64]; 4],
    read_bytes: u64,
    copied: u64,
) -> DeviceFigures {
    let median = |v: &[f64]| crate::lessons::cost::median(v).unwrap_or(f64::NAN).max(1e-6);
    let per_dispatch = (median(manys) - median(ones)) / f64::from(DISPATCHES - 1);
    // The copies' wall time less a submission's round trip (one tiny dispatch, waited for alike).
    let copy_ms = (median(copies) - median(ones)).max(median(copies) / 100.0);
    DeviceFigures {
        copy_bytes_per_s: copied as f64 / (copy_ms / 1e3),
        read_bytes_per_s: read_bytes as f64 / (median(reads) / 1e3),
        dispatch_ms: Some(per_dispatch.max(0.0)),
    }
}

/// `n` dispatches of one pipeline in one compute pass.
#[derive(Clone, Copy)]
struct Dispatches<'a> {
    pipeline: &'a wgpu::ComputePipeline,
    group: &'a wgpu::BindGroup,
    groups: [u32; 3],
    n: u32,
}

impl Dispatches<'_> {
    /// Records the pass, its beginning and end timed by `timer` if given.
    fn encode(&self, enc: &mut wgpu::CommandEncoder, timer: Option<&Timer>) {
        let timestamp_writes = timer.map(|t| t.writes(true, true));
        let desc = wgpu::ComputePassDescriptor { label: None, timestamp_writes };
        let mut cpass = enc.begin_compute_pass(&desc);
        cpass.set_pipeline(self.pipeline);
        cpass.set_bind_group(0, self.group, &[]);
        for _ in 0..self.n {
            cpass.dispatch_workgroups(self.groups[0], self.groups[1], self.groups[2]);
        }
    }
}

/// Milliseconds of the work `encode` records: the device's own time where
/// `timer` is given, else the wall time of the submit, waited for by 4
/// bytes of `wait.0` read back through `wait.1`.
async fn timed(
    gpu: &GpuModel,
    wait: (&wgpu::Buffer, &wgpu::Buffer),
    timer: Option<&Timer>,
    encode: impl FnOnce(&mut wgpu::CommandEncoder, Option<&Timer>),
) -> Result<f64> {
    let ctx = &gpu.ctx;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    encode(&mut enc, timer);
    enc.copy_buffer_to_buffer(wait.0, 0, wait.1, 0, 4);
    if let Some(t) = timer {
        t.resolve(&mut enc);
    }
    let start = web_time::Instant::now();
    ctx.queue.submit([enc.finish()]);
    let pending = timer.map(Timer::map);
    read_f32(ctx, wait.1, 4).await?;
    let wall = start.elapsed().as_secs_f64() * 1e3;
    match (timer, pending) {
        (Some(t), Some(pending)) => t.finish(pending).await,
        _ => Ok(wall),
    }
}

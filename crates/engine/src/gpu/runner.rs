//! What encodes, submits and reads back a pass, shared by a single session
//! and a batch: the uniform buffer of per-dispatch parameters (and what each
//! slot holds now, so a step writes only what changed), the logits buffer and
//! its staging copy, and the GPU timer. A step is: the parameters that
//! changed written, the op list encoded in one compute pass (per block, with
//! a probe), one copy of the wanted logits, one submit, one readback.

use std::cell::RefCell;
use std::rc::Rc;

use crate::error::Result;
use crate::gpu::ops::{bind, Op, PARAMS, SLOT};
use crate::gpu::plan::{Pass, Place};
use crate::gpu::probe::Probe;
use crate::gpu::readback::{buffer, read_timed, STORAGE};
use crate::gpu::timer::Timer;
use crate::gpu::GpuModel;
use crate::kernels::{argmax, At, Dispatch, Kernel};
use crate::step::StepStats;

/// Logits rows a session keeps on the GPU at once: `Wanted::All` over more
/// rows is read in chunks.
pub const MAX_LOGITS_BYTES: u64 = 64 << 20;

/// The logits buffer and its mappable copy, allocated before the op lists
/// that write it are built.
pub struct Logits {
    pub buffer: wgpu::Buffer, // (rows, vocab_size)
    staging: wgpu::Buffer,    // (rows, vocab_size), mappable
    pub rows: usize,
}

impl Logits {
    /// Room for `rows` rows of logits.
    pub fn new(gpu: &GpuModel, rows: usize) -> Result<Logits> {
        let ctx = &gpu.ctx;
        let row_bytes = (gpu.config().vocab_size * 4) as u64;
        ctx.check_binding("the rows of logits", rows as u64 * row_bytes)?;
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        Ok(Logits {
            buffer: buffer(ctx, "logits", rows as u64 * row_bytes, STORAGE),
            staging: buffer(ctx, "staging", rows as u64 * row_bytes, read),
            rows,
        })
    }
}

/// Runs op lists bound to its `params` slots.
pub struct Runner {
    gpu: Rc<GpuModel>,
    pub params: wgpu::Buffer, // (n_slots + 1) slots of SLOT bytes: the ops', then argmax's
    /// What each slot of `params` holds now (`None`: not written yet).
    written: RefCell<Vec<Option<[u8; PARAMS]>>>,
    pub logits: Logits,
    /// The greedy step's readback.
    greedy: Greedy,
    /// The steps' GPU time, where the device has timestamp queries.
    timer: Option<Box<Timer>>,
}

/// A greedy step's argmax over the last row of logits: its candidates (one
/// per workgroup) and their mappable copy, and its binding (params slot
/// `slot`, after the ops').
struct Greedy {
    best: wgpu::Buffer,    // (groups, 2) u32: index, value bits
    staging: wgpu::Buffer, // (groups, 2), mappable
    bind_group: wgpu::BindGroup,
    slot: usize,
}

impl Runner {
    /// A runner with `n_slots` parameter slots writing `logits`.
    pub fn new(gpu: Rc<GpuModel>, n_slots: usize, logits: Logits) -> Runner {
        let ctx = &gpu.ctx;
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let params = buffer(ctx, "params", (n_slots + 1) as u64 * SLOT, uniform);
        let groups = argmax::Shape::groups(gpu.config().vocab_size as u32);
        let best = buffer(ctx, "argmax", 8 * u64::from(groups), STORAGE);
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let staging = buffer(ctx, "argmax staging", 8 * u64::from(groups), read);
        let buffers = [&logits.buffer, &best];
        let bind_group = bind(&gpu, Kernel::Argmax, &params, n_slots as u64, &buffers, None);
        let greedy = Greedy { best, staging, bind_group, slot: n_slots };
        let timer = Timer::new(ctx).map(Box::new);
        let written = RefCell::new(vec![None; n_slots + 1]);
        Runner { gpu, params, written, logits, greedy, timer }
    }

    /// Writes the parameters of `ops` that differ from what their slots
    /// (from `first_slot` on) hold, and returns each op's workgroup count
    /// (`None`: a batch's sequence that sits the step out, not dispatched).
    /// Most ops' parameters are the same every decode step; only the
    /// position-dependent ones are written again.
    fn write_params(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass,
        stats: &mut StepStats,
    ) -> Vec<Option<[u32; 3]>> {
        let mut groups = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let mut p = [0u8; PARAMS];
            let g = op.params(&self.gpu, pass, &mut p);
            if g.is_some() {
                self.write_slot(first_slot + i, p, stats);
            }
            groups.push(g);
        }
        groups
    }

    /// Writes `p` into `slot` unless the slot holds it already.
    fn write_slot(&self, slot: usize, p: [u8; PARAMS], stats: &mut StepStats) {
        let mut written = self.written.borrow_mut();
        if written[slot] != Some(p) {
            self.gpu.ctx.queue.write_buffer(&self.params, slot as u64 * SLOT, &p);
            written[slot] = Some(p);
            stats.bytes_written += PARAMS;
        }
    }

    /// Writes the parameters of `ops` (from `first_slot` on), encodes them in
    /// one compute pass (with a `probe`: one pass per block, cut after the op
    /// counts `cuts`, the scratch copied out between them), copies
    /// `pass.lm_rows` of logits out, submits once and reads back.
    pub async fn run(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass<'_>,
        stats: &mut StepStats,
        probe: Option<(&Probe, &[usize])>,
    ) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        let mut enc = self.encode(ops, first_slot, pass, stats, probe, false);
        let read_bytes = pass.lm_rows as u64 * self.gpu.config().vocab_size as u64 * 4;
        enc.copy_buffer_to_buffer(&self.logits.buffer, 0, &self.logits.staging, 0, read_bytes);
        self.submit_and_read(enc, &self.logits.staging, read_bytes, start, stats).await
    }

    /// [`run`](Self::run) for a step that needs only the greedy token of the
    /// pass's last row of logits: argmax runs on the device after the LM
    /// head, and a few hundred bytes of its candidates come back instead of
    /// the row (`engine::sample::argmax` of it, exactly).
    pub async fn run_greedy(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass<'_>,
        stats: &mut StepStats,
    ) -> Result<u32> {
        let start = web_time::Instant::now();
        let mut enc = self.encode(ops, first_slot, pass, stats, None, true);
        let bytes = self.greedy.best.size();
        enc.copy_buffer_to_buffer(&self.greedy.best, 0, &self.greedy.staging, 0, bytes);
        let best = self.submit_and_read(enc, &self.greedy.staging, bytes, start, stats).await?;
        let best: Vec<[u32; 2]> =
            best.chunks_exact(2).map(|b| [b[0].to_bits(), b[1].to_bits()]).collect();
        Ok(argmax::finish(&best, self.gpu.config().vocab_size))
    }

    /// The parameters written and the passes encoded (see [`run`](Self::run));
    /// `greedy`: argmax over the last row of logits dispatched at the end.
    fn encode(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass<'_>,
        stats: &mut StepStats,
        probe: Option<(&Probe, &[usize])>,
        greedy: bool,
    ) -> wgpu::CommandEncoder {
        let ctx = &self.gpu.ctx;
        let groups = self.write_params(ops, first_slot, pass, stats);
        let argmax = greedy.then(|| {
            let mut p = [0u8; PARAMS];
            let groups = argmax::Shape.encode(&self.at(pass), self.gpu.format(), &mut p);
            self.write_slot(self.greedy.slot, p, stats);
            groups
        });
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let cuts = probe.map_or(&[][..], |(_, cuts)| cuts);
        let mut from = 0;
        for (k, &to) in cuts.iter().chain([&ops.len()]).enumerate() {
            let (first, last) = (from == 0, to == ops.len());
            let timer = self.timer.as_deref().filter(|_| first || last);
            let timestamp_writes = timer.map(|t| t.writes(first, last));
            let desc = wgpu::ComputePassDescriptor { label: None, timestamp_writes };
            let mut cpass = enc.begin_compute_pass(&desc);
            for (op, wg) in ops[from..to].iter().zip(&groups[from..to]) {
                let Some(wg) = wg else { continue };
                cpass.set_pipeline(self.gpu.pipelines.get(op.kernel()));
                cpass.set_bind_group(0, &op.bind_group, &[]);
                cpass.dispatch_workgroups(wg[0], wg[1], wg[2]);
                stats.dispatches += 1;
            }
            if let (Some(wg), true) = (argmax, last) {
                cpass.set_pipeline(self.gpu.pipelines.get(Kernel::Argmax));
                cpass.set_bind_group(0, &self.greedy.bind_group, &[]);
                cpass.dispatch_workgroups(wg[0], wg[1], wg[2]);
                stats.dispatches += 1;
            }
            drop(cpass);
            if let (Some((probe, _)), false) = (probe, last) {
                probe.copy(&mut enc, k, &self.gpu.scratch);
            }
            from = to;
        }
        if let Some((probe, _)) = probe {
            probe.finish(&mut enc);
        }
        enc
    }

    /// Where the argmax of `pass` runs: its last row of logits.
    fn at<'c>(&'c self, pass: &Pass<'_>) -> At<'c> {
        let config = self.gpu.config();
        let (n_rows, lm_row0, lm_rows) = (pass.n_rows, pass.lm_row0, pass.lm_rows);
        let Place { pos0, slot0, keys0, turn0, renumbered } = pass.place;
        At { config, n_rows, pos0, slot0, keys0, turn0, renumbered, row0: 0, lm_row0, lm_rows }
    }

    /// Resolves the timer into `enc`, submits it and reads `bytes` of
    /// `staging` back, timing each part into `stats` from `start`.
    async fn submit_and_read(
        &self,
        mut enc: wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
        bytes: u64,
        start: web_time::Instant,
        stats: &mut StepStats,
    ) -> Result<Vec<f32>> {
        let ctx = &self.gpu.ctx;
        if let Some(timer) = &self.timer {
            timer.resolve(&mut enc);
        }
        ctx.queue.submit([enc.finish()]);
        stats.submits += 1;
        stats.bytes_read += bytes as usize;
        stats.submit_ms += start.elapsed().as_secs_f64() * 1e3;
        let pending = self.timer.as_deref().map(Timer::map);
        let (values, wait_ms, readback_ms) = read_timed(ctx, staging, bytes).await?;
        stats.wait_ms += wait_ms;
        stats.readback_ms += readback_ms;
        if let (Some(timer), Some(pending)) = (&self.timer, pending) {
            let ms = timer.finish(pending).await?;
            stats.gpu_ms = Some(stats.gpu_ms.unwrap_or(0.0) + ms);
            stats.bytes_read += Timer::BYTES;
        }
        Ok(values)
    }
}

impl Runner {
    /// Each op of `ops` alone, `repeats` dispatches back to back in a pass of
    /// its own with timestamps: its GPU time per dispatch in ms (`None`: not
    /// dispatched), or `None` without timestamp queries. For the bench's
    /// kernel times: the ops write only the step's scratch and KV rows,
    /// which the next step writes again.
    pub async fn time_each(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass<'_>,
        repeats: u32,
    ) -> Result<Option<Vec<Option<f64>>>> {
        let ctx = &self.gpu.ctx;
        let Some(timer) = Timer::spans(ctx, ops.len() as u32) else { return Ok(None) };
        let groups = self.write_params(ops, first_slot, pass, &mut StepStats::default());
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        for (i, (op, wg)) in ops.iter().zip(&groups).enumerate() {
            let Some(wg) = wg else { continue };
            let desc = wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(timer.span(i as u32)),
            };
            let mut cpass = enc.begin_compute_pass(&desc);
            cpass.set_pipeline(self.gpu.pipelines.get(op.kernel()));
            cpass.set_bind_group(0, &op.bind_group, &[]);
            for _ in 0..repeats {
                cpass.dispatch_workgroups(wg[0], wg[1], wg[2]);
            }
        }
        timer.resolve(&mut enc);
        ctx.queue.submit([enc.finish()]);
        let pending = timer.map();
        ctx.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| {
            crate::error::EngineError::Gpu(format!("waiting for the GPU failed: {e}"))
        })?;
        let ms = timer.finish_spans(pending).await?;
        let per = |(t, g): (f64, &Option<[u32; 3]>)| g.map(|_| t / f64::from(repeats.max(1)));
        Ok(Some(ms.into_iter().zip(&groups).map(per).collect()))
    }
}

/// Frees the parameter and logits buffers at once (see `GpuSession`'s `Drop`
/// for why a browser needs it). Work already submitted finishes first.
impl Drop for Runner {
    fn drop(&mut self) {
        let greedy = [&self.greedy.best, &self.greedy.staging];
        for b in [&self.params, &self.logits.buffer, &self.logits.staging].into_iter().chain(greedy)
        {
            b.destroy();
        }
    }
}

//! A GPU session: the KV cache (which never leaves the GPU), a uniform buffer
//! of per-dispatch parameters, the logits buffer and its staging copy, and the
//! prefill/decode op lists built once. A step is: the token ids and the
//! parameters that changed since the last step written (a decode step changes
//! only the position-dependent ones: embedding, K/V write and attention), one
//! compute pass, one copy of the wanted logits, one submit, one readback.

use std::cell::RefCell;
use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::inspect;
use crate::gpu::plan::{self, Op, Pass, SessionBuffers, PARAMS, SLOT};
use crate::gpu::probe::{Probe, Source};
use crate::gpu::readback::{buffer, read_f32, STORAGE};
use crate::gpu::timer::Timer;
use crate::gpu::GpuModel;
use crate::model::Config;
use crate::step::{check_input, Inspection, Look, StepStats, Wanted};

/// Logits rows kept on the GPU at once: `Wanted::All` over more rows is read in chunks.
const MAX_LOGITS_BYTES: u64 = 64 << 20;

/// One sequence on the GPU.
pub struct GpuSession {
    gpu: Rc<GpuModel>,
    key_cache: Vec<wgpu::Buffer>,   // (n_layer) × (n_positions, n_embd)
    value_cache: Vec<wgpu::Buffer>, // (n_layer) × (n_positions, n_embd)
    params: wgpu::Buffer,           // (prefill ops + LM head ops) slots of SLOT bytes
    /// What each slot of `params` holds now (`None`: not written yet).
    written: RefCell<Vec<Option<[u8; PARAMS]>>>,
    logits: wgpu::Buffer,  // (logits_rows, vocab_size)
    staging: wgpu::Buffer, // (logits_rows, vocab_size), mappable
    logits_rows: usize,
    /// The op lists, built once (boxed: a session is moved around by value).
    ops: Box<OpLists>,
    /// The steps' GPU time, where the device has timestamp queries.
    timer: Option<Box<Timer>>,
    pos: usize,
    last: StepStats,
}

/// A session's dispatches, bound to its buffers when it opens.
struct OpLists {
    prefill: Vec<Op>,
    decode: Vec<Op>,
    /// The LM head alone, for chunks of `Wanted::All` after the first (last slots).
    lm_head: Vec<Op>,
    /// Op counts of `prefill` after which the residual stream is whole
    /// (the embedding, then each block): where a probe copies it.
    residual_ends: Vec<usize>,
}

impl GpuSession {
    /// An empty session over an uploaded model. Allocates the KV cache.
    pub fn new(gpu: Rc<GpuModel>) -> Result<GpuSession> {
        let c = gpu.config().clone();
        let ctx = &gpu.ctx;
        let cache_bytes = (c.n_positions * c.n_embd * 4) as u64;
        ctx.check_binding("one layer's KV cache", cache_bytes)?;
        let row_bytes = (c.vocab_size * 4) as u64;
        let logits_rows = (MAX_LOGITS_BYTES / row_bytes).clamp(1, c.n_positions as u64);
        ctx.check_binding("one row of logits", row_bytes)?;
        let cache =
            |label| (0..c.n_layer).map(|_| buffer(ctx, label, cache_bytes, STORAGE)).collect();
        let key_cache: Vec<_> = cache("key_cache");
        let value_cache: Vec<_> = cache("value_cache");
        let logits = buffer(ctx, "logits", logits_rows * row_bytes, STORAGE);
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let staging = buffer(ctx, "staging", logits_rows * row_bytes, read);
        let s =
            SessionBuffers { key_cache: &key_cache, value_cache: &value_cache, logits: &logits };
        let (prefill, decode) = (plan::prefill(&gpu, &s), plan::decode(&gpu, &s));
        let residual_ends = prefill.residual_ends;
        let (prefill, decode) = (prefill.specs, decode.specs);
        let lm_head = plan::lm_head(&gpu, &logits);
        // Prefill and decode share slots (one pass at a time; decode has
        // fewer ops); the LM head alone, for logits chunks, has its own after them.
        let n_slots = (prefill.len().max(decode.len()) + lm_head.len()) as u64;
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let params = buffer(ctx, "params", n_slots * SLOT, uniform);
        let written = RefCell::new(vec![None; n_slots as usize]);
        let prefill_ops = plan::bind_all(&gpu, &params, 0, &prefill);
        let decode_ops = plan::bind_all(&gpu, &params, 0, &decode);
        let lm_head_ops = plan::bind_all(&gpu, &params, prefill.len(), &lm_head);
        let timer = Timer::new(ctx).map(Box::new);
        Ok(GpuSession {
            gpu,
            key_cache,
            value_cache,
            params,
            written,
            logits,
            staging,
            logits_rows: logits_rows as usize,
            ops: Box::new(OpLists {
                prefill: prefill_ops,
                decode: decode_ops,
                lm_head: lm_head_ops,
                residual_ends,
            }),
            timer,
            pos: 0,
            last: StepStats::default(),
        })
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        self.gpu.config()
    }

    /// Tokens in the cache.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Cost of the last forward call.
    pub fn last_stats(&self) -> StepStats {
        self.last
    }

    /// The model on the GPU this session runs (its weight format and bytes).
    pub fn model(&self) -> &GpuModel {
        &self.gpu
    }

    /// The adapter this session runs on.
    pub fn adapter_name(&self) -> String {
        self.gpu.ctx.adapter_name()
    }

    /// Forgets everything from position `to` on (the cache rows stay, unused).
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        if to > self.pos {
            return Err(EngineError::Rewind { to, pos: self.pos });
        }
        self.pos = to;
        Ok(())
    }

    /// A new session whose KV cache is a GPU-to-GPU copy of this one's first `pos` rows.
    pub fn fork(&self) -> Result<GpuSession> {
        let mut other = GpuSession::new(self.gpu.clone())?;
        let bytes = (self.pos * self.config().n_embd * 4) as u64;
        if bytes > 0 {
            let ctx = &self.gpu.ctx;
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            for (src, dst) in self.key_cache.iter().zip(&other.key_cache) {
                enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
            }
            for (src, dst) in self.value_cache.iter().zip(&other.value_cache) {
                enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
            }
            ctx.queue.submit([enc.finish()]);
        }
        other.pos = self.pos;
        Ok(other)
    }

    /// The whole prompt in one batched pass (matmul kernels).
    pub async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        self.forward(tokens, wanted, false, None).await
    }

    /// [`prefill`](Self::prefill) of `tokens`, also returning what `look`
    /// asks for (see [`Inspection`]). The residual stream and each block's
    /// `qkv` are copied out between per-block compute passes; the attention
    /// weights take one more submit (`inspect.rs`). Only this call pays.
    pub async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        let (c, ctx, pos0, n) =
            (self.config().clone(), self.gpu.ctx.clone(), self.pos, tokens.len());
        let mut probe = Probe::default();
        let x = match look.residuals {
            true => {
                Some(probe.tap(&ctx, Source::X, (0, c.n_layer + 1), (n * c.n_embd * 4) as u64)?)
            }
            false => None,
        };
        let qkv = match look.attention {
            true => {
                Some(probe.tap(&ctx, Source::Qkv, (1, c.n_layer), (n * 3 * c.n_embd * 4) as u64)?)
            }
            false => None,
        };
        let logits = self.forward(tokens, wanted, false, Some(&probe)).await?;
        let residuals = match x {
            Some(i) => Some(probe.read(&ctx, i).await?),
            None => None,
        };
        self.last.bytes_read += residuals.as_ref().map_or(0, |r| r.len() * 4);
        let attention = match qkv {
            Some(i) => {
                let keys = &self.key_cache;
                Some(inspect::attention(&self.gpu, keys, &probe.taps[i], n, pos0).await?)
            }
            None => None,
        };
        if let Some(a) = &attention {
            self.last.submits += 1;
            self.last.dispatches += c.n_layer;
            self.last.bytes_read += a.len() * 4;
        }
        Ok(Inspection { logits, residuals, attention })
    }

    /// One token through the cached context (the fused decode kernels).
    pub async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        self.forward(&[token], Wanted::Last, true, None).await
    }

    async fn forward(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        decode: bool,
        probe: Option<&Probe>,
    ) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        check_input(&self.gpu.model, self.pos, tokens)?;
        let n = tokens.len();
        let (lm_row0, total_rows) = match wanted {
            Wanted::Last => (n - 1, 1),
            Wanted::All => (0, n),
        };
        let first_rows = total_rows.min(self.logits_rows);
        let pass = Pass {
            n_rows: n as u32,
            pos0: self.pos as u32,
            lm_row0: lm_row0 as u32,
            lm_rows: first_rows as u32,
        };
        let mut stats = StepStats { tokens: n, ..StepStats::default() };
        let ops = if decode { &self.ops.decode } else { &self.ops.prefill };
        let ctx = &self.gpu.ctx;
        ctx.queue.write_buffer(&self.gpu.scratch.tokens, 0, bytemuck::cast_slice(tokens));
        stats.bytes_written += n * 4;
        let mut logits = self.run(ops, 0, &pass, &mut stats, probe).await?;
        // Rows beyond the logits buffer: the LM head alone, chunk by chunk.
        while logits.len() < total_rows * self.config().vocab_size {
            let done = logits.len() / self.config().vocab_size;
            let rows = (total_rows - done).min(self.logits_rows);
            let chunk = Pass { lm_row0: (lm_row0 + done) as u32, lm_rows: rows as u32, ..pass };
            let slot = self.ops.prefill.len();
            logits.extend(self.run(&self.ops.lm_head, slot, &chunk, &mut stats, None).await?);
        }
        self.pos += n;
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        self.last = stats;
        Ok(logits)
    }

    /// Bytes of the KV cache buffers as created (the whole context, up front).
    pub fn kv_bytes_allocated(&self) -> u64 {
        self.key_cache.iter().chain(&self.value_cache).map(wgpu::Buffer::size).sum()
    }

    /// Every buffer this session owns (what `Drop` frees).
    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let own = [&self.params, &self.logits, &self.staging];
        self.key_cache.iter().chain(&self.value_cache).chain(own)
    }

    /// Writes the parameters of `ops` that differ from what their slots
    /// (from `first_slot` on) hold, and returns each op's workgroup count.
    /// Most ops' parameters are the same every decode step; only the
    /// position-dependent ones are written again.
    fn write_params(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass,
        stats: &mut StepStats,
    ) -> Vec<[u32; 3]> {
        let mut written = self.written.borrow_mut();
        let mut groups = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let mut p = [0u8; PARAMS];
            groups.push(op.params(&self.gpu, pass, &mut p));
            let slot = first_slot + i;
            if written[slot] != Some(p) {
                self.gpu.ctx.queue.write_buffer(&self.params, slot as u64 * SLOT, &p);
                written[slot] = Some(p);
                stats.bytes_written += PARAMS;
            }
        }
        groups
    }

    /// Writes the parameters of `ops` (from `first_slot` on), encodes them in
    /// one compute pass (with a `probe`: one pass per block, the residual
    /// stream copied out between them), copies `pass.lm_rows` of logits out,
    /// submits once and reads back.
    async fn run(
        &self,
        ops: &[Op],
        first_slot: usize,
        pass: &Pass,
        stats: &mut StepStats,
        probe: Option<&Probe>,
    ) -> Result<Vec<f32>> {
        let ctx = &self.gpu.ctx;
        let groups = self.write_params(ops, first_slot, pass, stats);
        let read_bytes = pass.lm_rows as u64 * self.config().vocab_size as u64 * 4;
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let cuts = match probe {
            Some(_) => &self.ops.residual_ends[..],
            None => &[],
        };
        let mut from = 0;
        for (k, &to) in cuts.iter().chain([&ops.len()]).enumerate() {
            let (first, last) = (from == 0, to == ops.len());
            let timer = self.timer.as_deref().filter(|_| first || last);
            let timestamp_writes = timer.map(|t| t.writes(first, last));
            let desc = wgpu::ComputePassDescriptor { label: None, timestamp_writes };
            let mut cpass = enc.begin_compute_pass(&desc);
            for (op, wg) in ops[from..to].iter().zip(&groups[from..to]) {
                cpass.set_pipeline(self.gpu.pipelines.get(op.kernel));
                cpass.set_bind_group(0, &op.bind_group, &[]);
                cpass.dispatch_workgroups(wg[0], wg[1], wg[2]);
            }
            drop(cpass);
            if let (Some(probe), false) = (probe, last) {
                probe.copy(&mut enc, k, &self.gpu.scratch);
            }
            from = to;
        }
        if let Some(probe) = probe {
            probe.finish(&mut enc);
        }
        enc.copy_buffer_to_buffer(&self.logits, 0, &self.staging, 0, read_bytes);
        if let Some(timer) = &self.timer {
            timer.resolve(&mut enc);
        }
        ctx.queue.submit([enc.finish()]);
        stats.dispatches += ops.len();
        stats.submits += 1;
        stats.bytes_read += read_bytes as usize;
        let pending = self.timer.as_deref().map(Timer::map);
        let logits = read_f32(ctx, &self.staging, read_bytes).await?;
        if let (Some(timer), Some(pending)) = (&self.timer, pending) {
            let ms = timer.finish(pending).await?;
            stats.gpu_ms = Some(stats.gpu_ms.unwrap_or(0.0) + ms);
            stats.bytes_read += Timer::BYTES;
        }
        Ok(logits)
    }
}

/// Frees the KV cache and logits buffers at once. In the browser a dropped
/// `wgpu::Buffer` is only a JS object waiting for the garbage collector, which
/// knows nothing of GPU memory: a page that generates and resets for an hour
/// would hold every old cache until then. Work already submitted finishes first.
impl Drop for GpuSession {
    fn drop(&mut self) {
        self.buffers().for_each(wgpu::Buffer::destroy);
    }
}

//! A GPU session: the KV cache (which never leaves the GPU), the prefill and
//! decode op lists built once, and a [`Runner`] (parameter slots, logits,
//! timer). A step is: the token ids and the parameters that changed since the
//! last step written (a decode step changes only the position-dependent ones:
//! embedding, K/V write and attention), one compute pass, one copy of the
//! wanted logits, one submit, one readback.

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::inspect;
use crate::gpu::ops::{self, Caches, Op, SessionBuffers, Totals};
use crate::gpu::plan::{self, Pass};
use crate::gpu::plan_decode;
use crate::gpu::probe::{Probe, Source};
use crate::gpu::readback::{buffer, STORAGE};
use crate::gpu::runner::{Logits, Runner, MAX_LOGITS_BYTES};
use crate::gpu::GpuModel;
use crate::kv_policy::KvPolicy;
use crate::kv_slots::Slots;
use crate::model::Config;
use crate::step::{Inspection, KvBytes, Look, StepStats, Wanted};

/// One sequence on the GPU.
pub struct GpuSession {
    pub(super) gpu: Rc<GpuModel>,
    key_cache: Vec<wgpu::Buffer>, // (n_layer) × (slots, n_embd): n_positions, or the policy's budget
    value_cache: Vec<wgpu::Buffer>, // (n_layer) × (slots, n_embd)
    /// Which token each cache slot holds, under which policy (`full`: every token).
    pub(super) slots: Slots,
    /// A heavy-hitter session's attention totals, on the device.
    pub(super) totals: Option<Box<Totals>>,
    /// A renumbering session's slots whose keys turn back (`kv_renumber`).
    pub(super) renumbered: Option<wgpu::Buffer>, // (slots) u32
    /// Parameter slots (prefill ops + LM head ops), logits, timer (boxed: a
    /// session is moved around by value).
    pub(super) runner: Box<Runner>,
    /// The op lists, built once.
    pub(super) ops: Box<OpLists>,
    pub(super) pos: usize,
    pub(super) last: StepStats,
}

/// One dispatch of a step timed alone (the bench's kernel times).
pub struct KernelTime {
    pub kernel: crate::kernels::Kernel,
    /// GPU time of one dispatch.
    pub ms: f64,
    pub cost: Option<crate::kernels::Cost>,
}

/// A session's dispatches, bound to its buffers when it opens.
pub(super) struct OpLists {
    pub(super) prefill: Vec<Op>,
    /// A prefill of at most `matmul_split::MAX_ROWS` rows on real GPUs
    /// (`plan::short_prefill`); the same ops as `prefill` but the linear
    /// layers', so `residual_ends` holds for it too.
    pub(super) short: Option<Vec<Op>>,
    pub(super) decode: Vec<Op>,
    /// The LM head alone, for chunks of `Wanted::All` after the first (last slots).
    pub(super) lm_head: Vec<Op>,
    /// Op counts of `prefill` after which the residual stream is whole
    /// (the embedding, then each block): where a probe copies it.
    pub(super) residual_ends: Vec<usize>,
}

impl OpLists {
    /// The ops of a prefill pass of `n` rows.
    pub(super) fn rows(&self, n: usize) -> &[Op] {
        match &self.short {
            Some(short) if n <= crate::kernels::matmul_split::MAX_ROWS => short,
            _ => &self.prefill,
        }
    }
}

impl GpuSession {
    /// An empty session over an uploaded model. Allocates the KV cache.
    pub fn new(gpu: Rc<GpuModel>) -> Result<GpuSession> {
        GpuSession::with_policy(gpu, KvPolicy::Full)
    }

    /// An empty session whose cache keeps what `policy` keeps: it allocates
    /// the budget's slots, not the whole context's.
    pub fn with_policy(gpu: Rc<GpuModel>, policy: KvPolicy) -> Result<GpuSession> {
        let c = gpu.config().clone();
        let ctx = &gpu.ctx;
        let slots = Slots::new(policy);
        let capacity = slots.capacity(c.n_positions);
        let cache_bytes = (capacity * c.kv_dim() * 4) as u64;
        ctx.check_binding("one layer's KV cache", cache_bytes)?;
        let row_bytes = (c.vocab_size * 4) as u64;
        ctx.check_binding("one row of logits", row_bytes)?;
        // As many rows as fit both our cap and one storage binding.
        let cap = MAX_LOGITS_BYTES.min(ctx.limits.max_storage_buffer_binding_size);
        let logits_rows = (cap / row_bytes).clamp(1, c.n_positions as u64);
        let logits = Logits::new(&gpu, logits_rows as usize)?;
        let cache =
            |label| (0..c.n_layer).map(|_| buffer(ctx, label, cache_bytes, STORAGE)).collect();
        let key_cache: Vec<_> = cache("key_cache");
        let value_cache: Vec<_> = cache("value_cache");
        // A handle to the same buffer: the ops bind it, the runner owns it.
        let logits_buffer = logits.buffer.clone();
        let totals = match policy.ranks_by_mass() {
            true => Some(Box::new(Totals::new(&gpu, capacity)?)),
            false => None,
        };
        let renumbered = policy
            .renumbers()
            .then(|| buffer(ctx, "renumbered", (capacity.max(1) * 4) as u64, STORAGE));
        let caches = [Caches { key_cache: &key_cache, value_cache: &value_cache }];
        let (mass, renumbered_ref) = (totals.as_deref(), renumbered.as_ref());
        let s = SessionBuffers {
            caches: &caches,
            logits: &logits_buffer,
            mass,
            renumbered: renumbered_ref,
        };
        let layout = gpu.layout();
        let extra = plan::PolicyOps::of(policy);
        let (prefill, decode) =
            (plan::prefill(&layout, extra), plan_decode::decode(&layout, extra));
        let residual_ends = prefill.residual_ends;
        let short = plan::short_prefill(&layout, extra).map(|b| b.specs);
        let (prefill, decode) = (prefill.specs, decode.specs);
        let lm_head = plan::lm_head(&layout);
        // Prefill and decode share slots (one pass at a time; decode has
        // fewer ops); the LM head alone, for logits chunks, has its own after them.
        let n_slots = prefill.len().max(decode.len()) + lm_head.len();
        let runner = Runner::new(gpu.clone(), n_slots, logits);
        let head_slot = prefill.len();
        let ops = OpLists {
            prefill: ops::bind_all(&gpu, &runner.params, 0, prefill, &s),
            short: short.map(|short| ops::bind_all(&gpu, &runner.params, 0, short, &s)),
            decode: ops::bind_all(&gpu, &runner.params, 0, decode, &s),
            lm_head: ops::bind_all(&gpu, &runner.params, head_slot, lm_head, &s),
            residual_ends,
        };
        Ok(GpuSession {
            gpu,
            key_cache,
            value_cache,
            slots,
            totals,
            renumbered,
            runner: Box::new(runner),
            ops: Box::new(ops),
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

    /// Forgets everything from position `to` on (the rows past the held
    /// slots stay, unused; tokens evicted before `to` do not come back).
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        if to > self.pos {
            return Err(EngineError::Rewind { to, pos: self.pos });
        }
        self.rewind_slots(to);
        self.pos = to;
        Ok(())
    }

    /// A new session whose KV cache is a GPU-to-GPU copy of this one's held rows.
    pub fn fork(&self) -> Result<GpuSession> {
        let mut other = GpuSession::with_policy(self.gpu.clone(), self.slots.policy())?;
        other.copy_from(self)?;
        Ok(other)
    }

    /// Takes `src`'s first `pos` rows of keys and values (GPU to GPU, into this
    /// session's own buffers, so a batch bound to them stays valid) and its
    /// position. Returns the bytes copied.
    pub fn copy_from(&mut self, src: &GpuSession) -> Result<u64> {
        if !Rc::ptr_eq(&self.gpu, &src.gpu) || self.slots.policy() != src.slots.policy() {
            return Err(EngineError::Batch(
                "a KV cache is copied only between sessions of one model and one cache policy"
                    .into(),
            ));
        }
        let bytes = (src.slots.held().len() * self.config().kv_dim() * 4) as u64;
        if bytes > 0 {
            let ctx = &self.gpu.ctx;
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            for (from, to) in src.key_cache.iter().zip(&self.key_cache) {
                enc.copy_buffer_to_buffer(from, 0, to, 0, bytes);
            }
            for (from, to) in src.value_cache.iter().zip(&self.value_cache) {
                enc.copy_buffer_to_buffer(from, 0, to, 0, bytes);
            }
            if let (Some(from), Some(to)) = (&src.totals, &self.totals) {
                enc.copy_buffer_to_buffer(&from.mass, 0, &to.mass, 0, from.mass.size());
            }
            ctx.queue.submit([enc.finish()]);
        }
        self.slots.clone_from(&src.slots);
        self.pos = src.pos;
        Ok(bytes * 2 * self.key_cache.len() as u64)
    }

    /// The whole prompt in one batched pass (matmul kernels).
    pub async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        self.forward(tokens, wanted, false).await
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
            true => Some(probe.tap(
                &ctx,
                Source::Qkv,
                (1, c.n_layer),
                (n * c.qkv_width() * 4) as u64,
            )?),
            false => None,
        };
        let logits = self.forward_probed(tokens, wanted, &probe).await?;
        let residuals = match x {
            Some(i) => Some(probe.read(&ctx, i).await?),
            None => None,
        };
        self.last.bytes_read += residuals.as_ref().map_or(0, |r| r.len() * 4);
        let attention = match qkv {
            Some(i) => {
                let keys = &self.key_cache;
                // Within the budget (else `forward_probed` refused): slots 0.. are positions 0...
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
        self.forward(&[token], Wanted::Last, true).await
    }

    /// [`decode`](Self::decode) for a caller that needs only the greedy
    /// token: the argmax of the logits runs on the device and a few hundred
    /// bytes come back instead of the logits (`engine::sample::argmax` of
    /// them, exactly).
    pub async fn decode_greedy(&mut self, token: u32) -> Result<u32> {
        self.forward_greedy(token).await
    }

    /// This session's KV cache, every layer (a batch binds it).
    pub(super) fn caches(&self) -> Caches<'_> {
        Caches { key_cache: &self.key_cache, value_cache: &self.value_cache }
    }

    /// The cost record of each dispatch of a decode step at the current
    /// position (the bench's table; see [`crate::kernels::Cost`]).
    pub fn decode_costs(&self) -> Vec<(crate::kernels::Kernel, crate::kernels::Cost)> {
        let pass = Pass::single(1, self.next_place(), 0, 1);
        let ops = self.ops.decode.iter();
        ops.filter_map(|op| Some((op.kernel(), op.cost(&self.gpu, &pass)?))).collect()
    }

    /// Each kernel of a decode step (`prefill`: of a prefill of that many
    /// tokens) alone on the GPU, `repeats` dispatches back to back: its GPU
    /// time per dispatch in ms and its cost record, in the step's order.
    /// `None` without timestamp queries, or past the context. Leaves the
    /// session as it was: the ops write only scratch and the KV rows from
    /// the current position on, which the next step writes again.
    pub async fn kernel_times(
        &self,
        prefill: Option<usize>,
        repeats: u32,
    ) -> Result<Option<Vec<KernelTime>>> {
        let n = prefill.unwrap_or(1).max(1);
        let capacity = self.slots.capacity(self.config().n_positions);
        let past = self.pos + n > self.config().n_positions || n > self.gpu.scratch.rows;
        if past || self.slots.held().len() + n > capacity {
            return Ok(None);
        }
        let ops = if prefill.is_some() { self.ops.rows(n) } else { &self.ops.decode };
        if prefill.is_some() {
            let tokens = vec![0u32; n]; // any ids: only the time is kept
            self.gpu.ctx.queue.write_buffer(
                &self.gpu.scratch.tokens,
                0,
                bytemuck::cast_slice(&tokens),
            );
        }
        let pass = Pass::single(n as u32, self.next_place(), n as u32 - 1, 1);
        let Some(ms) = self.runner.time_each(ops, 0, &pass, repeats).await? else {
            return Ok(None);
        };
        let timed = ops.iter().zip(ms).filter_map(|(op, ms)| {
            Some(KernelTime { kernel: op.kernel(), ms: ms?, cost: op.cost(&self.gpu, &pass) })
        });
        Ok(Some(timed.collect()))
    }

    /// The shared model, to check a batch's sessions run one model.
    pub(super) fn shared(&self) -> &Rc<GpuModel> {
        &self.gpu
    }

    /// Records a batched step this session took part in (its slot already
    /// taken): one position on.
    pub(super) fn took_step(&mut self, stats: StepStats) {
        self.pos += 1;
        self.last = stats;
    }

    /// The KV cache's bytes from its buffers: their sizes as created (the
    /// whole context, or the policy's budget, up front), and the share of
    /// them the held slots take.
    pub fn kv_bytes(&self) -> KvBytes {
        let allocated: u64 =
            self.key_cache.iter().chain(&self.value_cache).map(wgpu::Buffer::size).sum();
        // Each buffer holds `capacity` slots; the held ones hold tokens.
        // (Reading the buffers back to find them would cost a whole cache's readback.)
        let capacity = self.slots.capacity(self.config().n_positions) as u64;
        KvBytes { in_use: allocated / capacity * self.slots.held().len() as u64, allocated }
    }
}

/// Frees the KV cache at once (the runner frees its own buffers). In the browser a dropped
/// `wgpu::Buffer` is only a JS object waiting for the garbage collector, which
/// knows nothing of GPU memory: a page that generates and resets for an hour
/// would hold every old cache until then. Work already submitted finishes first.
impl Drop for GpuSession {
    fn drop(&mut self) {
        self.key_cache.iter().chain(&self.value_cache).for_each(wgpu::Buffer::destroy);
        if let Some(t) = &self.totals {
            t.probs.destroy();
            t.mass.destroy();
        }
        if let Some(r) = &self.renumbered {
            r.destroy();
        }
    }
}

//! The CPU reference engine: the forward pass written as calls to each
//! kernel's CPU twin, in data-flow order. It is what the GPU engine is tested
//! against and what the browser runs when WebGPU is absent, so it uses no
//! threads and no file system.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::kv_policy::KvPolicy;
use crate::kv_slots::Slots;
use crate::model::Config;
use crate::step::{check_input, Inspection, KvBytes, Look, SharedModel, StepStats, Wanted};
use forward::Seen;

mod batch;
pub mod coworker;
mod forward;
mod pass;
mod session_impl;
mod slots;

/// Gives the caller's event loop a turn. In the browser the CPU engine runs
/// on the page's main thread: a long prefill (a long prompt, or the re-prefill
/// after a context crop) is cut into chunks with a pause between them, so the
/// page keeps painting and answering clicks. The app passes a `setTimeout(0)`.
pub type Pause = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = ()>>>>;

/// Floating-point work per chunk of a paused prefill: about 25 ms of the
/// ~4 GFLOP/s the CPU engine does in Chromium (the bundled model: 13 rows).
const CHUNK_FLOPS: usize = 100_000_000;

/// This machine's copy rate (a 32 MB copy) and read rate (a 32 MB sum in
/// sixteen lanes, which the compiler vectorises: one thread, as the CPU
/// engine's decode step mostly is), medians of 5 (with `pause`, the page
/// gets a turn between runs).
pub async fn device_figures(pause: Option<&Pause>) -> crate::step::DeviceFigures {
    const BYTES: usize = 32 << 20;
    let from = vec![1u8; BYTES];
    let mut to = vec![0u8; BYTES];
    let words = vec![1u32; BYTES / 4];
    let (mut copy, mut read) = (Vec::with_capacity(5), Vec::with_capacity(5));
    for _ in 0..5 {
        let start = web_time::Instant::now();
        to.copy_from_slice(std::hint::black_box(&from));
        std::hint::black_box(&to);
        copy.push(start.elapsed().as_secs_f64());
        let start = web_time::Instant::now();
        std::hint::black_box(lane_sums(std::hint::black_box(&words)));
        read.push(start.elapsed().as_secs_f64());
        if let Some(pause) = pause {
            pause().await;
        }
    }
    let rate =
        |secs: &[f64]| BYTES as f64 / crate::lessons::cost::median(secs).unwrap_or(1.0).max(1e-9);
    crate::step::DeviceFigures {
        copy_bytes_per_s: rate(&copy),
        read_bytes_per_s: rate(&read),
        dispatch_ms: None,
    }
}

/// Sixteen wrapping sums of `words` (lane j: the words ≡ j mod 16).
fn lane_sums(words: &[u32]) -> [u32; 16] {
    let mut lanes = [0u32; 16];
    for chunk in words.chunks_exact(16) {
        for (l, &w) in lanes.iter_mut().zip(chunk) {
            *l = l.wrapping_add(w);
        }
    }
    lanes
}

/// The most positions a CPU cache reserves when it opens: a longer context
/// (SmolLM2's 8,192, Qwen2.5's 32,768) grows past it as tokens arrive, since
/// a page's wasm memory commits what is reserved (377 MB for SmolLM2-135M's
/// whole context, 805 MB for Qwen2.5-0.5B's, per session).
pub const RESERVED_POSITIONS: usize = 2048;

/// One layer's empty cache with room for the whole context (up to
/// [`RESERVED_POSITIONS`]), reserved up front so that decoding within it
/// never allocates.
fn empty_cache(c: &Config) -> Vec<Vec<f32>> {
    let rows = c.n_positions.min(RESERVED_POSITIONS);
    (0..c.n_layer).map(|_| Vec::with_capacity(rows * c.kv_dim())).collect()
}

/// A copy keeps the whole context reserved (`Vec::clone` would reserve only
/// the rows held, and the copy's next step would reallocate).
impl Clone for CpuSession {
    fn clone(&self) -> CpuSession {
        let mut copy = CpuSession::new(self.model.clone());
        copy.pause = self.pause.clone();
        copy.last = self.last;
        copy.take_rows(self);
        copy
    }
}

/// A CPU session: the model plus its own KV cache.
pub struct CpuSession {
    model: SharedModel,
    key_cache: Vec<Vec<f32>>, // (n_layer) × (held, n_embd), capacity (slots, n_embd)
    value_cache: Vec<Vec<f32>>, // (n_layer) × (held, n_embd), capacity (slots, n_embd)
    pos: usize,
    /// Which token each cache slot holds, under which policy (`full`: every token).
    slots: Slots,
    /// (held) the attention each slot has received (heavy hitters only).
    mass: Vec<f32>,
    last: StepStats,
    pause: Option<Pause>,
}

impl CpuSession {
    /// An empty session (position 0).
    pub fn new(model: SharedModel) -> CpuSession {
        let cache = || empty_cache(&model.config);
        CpuSession {
            key_cache: cache(),
            value_cache: cache(),
            model,
            pos: 0,
            slots: Slots::new(KvPolicy::Full),
            mass: Vec::new(),
            last: StepStats::default(),
            pause: None,
        }
    }

    /// The same session keeping only what `policy` keeps (before any
    /// token): its cache reserves the budget's rows, not the whole context's.
    pub fn with_policy(mut self, policy: KvPolicy) -> CpuSession {
        self.slots = Slots::new(policy);
        let rows = self.slots.capacity(self.config().n_positions) * self.config().kv_dim();
        for cache in self.key_cache.iter_mut().chain(&mut self.value_cache) {
            *cache = Vec::with_capacity(rows);
        }
        self
    }

    /// The same session, pausing between chunks of a long prefill (see [`Pause`]).
    pub fn with_pause(mut self, pause: Pause) -> CpuSession {
        self.pause = Some(pause);
        self
    }

    /// The page's turn between two steps of a loop over tokens (none natively).
    pub async fn pause(&self) {
        if let Some(pause) = &self.pause {
            pause().await;
        }
    }

    /// Rows per chunk of a paused prefill: [`CHUNK_FLOPS`] of work, at least one.
    fn chunk_rows(&self) -> usize {
        let c = self.config();
        let (e, i) = (c.n_embd, c.n_inner);
        // The block matmuls, plus attention over a full context (an upper bound).
        let per_row = 2 * c.n_layer * (4 * e * e + 2 * e * i + 2 * c.n_positions * e);
        (CHUNK_FLOPS / per_row.max(1)).max(1)
    }

    /// `tokens` in one pass, or, with a pause set, in chunks of
    /// [`chunk_rows`](Self::chunk_rows) with a pause between them. The logits
    /// are the same bit for bit: every row's arithmetic is the same whatever
    /// the chunk (a test checks it).
    pub async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        Ok(self.prefill_inspected(tokens, wanted, Look::default()).await?.logits)
    }

    /// [`prefill`](Self::prefill), also returning what `look` asks for (see
    /// [`Inspection`]), paused between chunks the same way; each chunk's
    /// copies are put in place row by row.
    pub async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        check_input(&self.model, self.pos, tokens)?;
        if !self.slots.fits(tokens.len()) {
            if look.residuals || look.attention {
                return Err(EngineError::Setting(
                    "the views that look inside the model read the full cache: use --kv-policy full"
                        .into(),
                ));
            }
            let logits = self.forward(tokens, wanted)?;
            return Ok(Inspection { logits, ..Inspection::default() });
        }
        let rows = if self.pause.is_some() { self.chunk_rows() } else { tokens.len() };
        let c = self.config().clone();
        let (n, e, n_cols) = (tokens.len(), c.n_embd, self.pos + tokens.len());
        let mut out = Inspection {
            logits: Vec::new(),
            residuals: look.residuals.then(|| vec![0.0; (c.n_layer + 1) * n * e]),
            attention: look.attention.then(|| vec![0.0; c.n_layer * c.n_head * n * n_cols]),
        };
        // The engine's own time: the chunks' compute, not the page's turns
        // in between (the cost lessons time the model, not the event loop).
        let mut wall_ms = 0.0;
        for (i, chunk) in tokens.chunks(rows).enumerate() {
            if i > 0 {
                self.pause().await;
            }
            let (r0, cr, pc0) = (i * rows, chunk.len(), self.pos);
            let start = web_time::Instant::now();
            let mut seen = Seen {
                residuals: look.residuals.then(Vec::new), // (n_layer + 1, cr, n_embd)
                attention: look.attention.then(Vec::new), // (n_layer, n_head, cr, pc0 + cr)
            };
            let part = self.run_probed(chunk, wanted, &mut seen);
            wall_ms += start.elapsed().as_secs_f64() * 1e3;
            place(&mut out, &seen, (n, e), (r0, cr, pc0));
            match wanted {
                Wanted::All => out.logits.extend(part),
                Wanted::Last => out.logits = part,
            }
        }
        self.last = StepStats { tokens: n, wall_ms, ..StepStats::default() };
        Ok(out)
    }

    /// This machine's copy rate (see [`device_figures`]).
    pub async fn device_figures(&self) -> crate::step::DeviceFigures {
        device_figures(self.pause.as_ref()).await
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.model.config
    }

    /// The model this session runs.
    pub fn model(&self) -> &SharedModel {
        &self.model
    }

    /// The KV cache's bytes: the rows it holds (its vectors' lengths) and
    /// what is reserved (their capacities: the whole context, or
    /// [`RESERVED_POSITIONS`] of it when the session opened and more as
    /// tokens went past them).
    pub fn kv_bytes(&self) -> KvBytes {
        let caches = || self.key_cache.iter().chain(&self.value_cache);
        let bytes = |floats: usize| (floats * std::mem::size_of::<f32>()) as u64;
        KvBytes {
            in_use: bytes(caches().map(Vec::len).sum()),
            allocated: bytes(caches().map(Vec::capacity).sum()),
        }
    }

    /// Tokens in the cache.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Cost of the last forward call.
    pub fn last_stats(&self) -> StepStats {
        self.last
    }

    /// Forgets everything from position `to` on.
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        if to > self.pos {
            return Err(EngineError::Rewind { to, pos: self.pos });
        }
        // Tokens evicted before `to` do not come back.
        self.rewind_slots(to);
        self.pos = to;
        Ok(())
    }

    /// Takes `src`'s first `pos` rows of keys and values and its position.
    /// Returns the bytes copied.
    pub fn copy_from(&mut self, src: &CpuSession) -> Result<u64> {
        if !std::sync::Arc::ptr_eq(&self.model, &src.model) || self.policy() != src.policy() {
            return Err(EngineError::Batch(
                "a KV cache is copied only between sessions of one model and one cache policy"
                    .into(),
            ));
        }
        Ok(self.take_rows(src))
    }

    /// `src`'s cache rows and position (same model): the bytes copied.
    fn take_rows(&mut self, src: &CpuSession) -> u64 {
        let n = src.slots.held().len() * self.config().kv_dim();
        self.slots.clone_from(&src.slots);
        self.mass.clone_from(&src.mass);
        let pairs = self.key_cache.iter_mut().zip(&src.key_cache);
        for (to, from) in pairs.chain(self.value_cache.iter_mut().zip(&src.value_cache)) {
            to.clear();
            to.extend_from_slice(&from[..n]);
        }
        self.pos = src.pos;
        (n * 4 * 2 * self.key_cache.len()) as u64
    }

    /// Runs `tokens` at positions `pos..`, appending their k and v to the cache.
    pub fn forward(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        check_input(&self.model, self.pos, tokens)?;
        let shared = crate::fast::coworker::shared();
        let logits = self.run_within_budget(tokens, wanted);
        self.last = StepStats {
            tokens: tokens.len(),
            wall_ms: start.elapsed().as_secs_f64() * 1e3,
            coworker: crate::fast::coworker::shared() > shared,
            ..StepStats::default()
        };
        Ok(logits)
    }
}

/// Puts a chunk's copies (`seen`: rows `r0 .. r0 + cr` of a pass of `n`
/// rows `e` wide, the chunk starting at position `pc0`) in place in `out`.
fn place(
    out: &mut Inspection,
    seen: &Seen,
    (n, e): (usize, usize),
    (r0, cr, pc0): (usize, usize, usize),
) {
    if let (Some(all), Some(part)) = (&mut out.residuals, &seen.residuals) {
        for (l, copy) in part.chunks_exact(cr * e).enumerate() {
            all[(l * n + r0) * e..][..copy.len()].copy_from_slice(copy);
        }
    }
    if let (Some(all), Some(part)) = (&mut out.attention, &seen.attention) {
        // Row (l, h, r) of the chunk is row (l, h, r0 + r) of the whole,
        // whose rows hold every key of the pass (pc0 + cr of the chunk's).
        let n_cols = pc0 - r0 + n;
        for (k, row) in part.chunks_exact(pc0 + cr).enumerate() {
            let (lh, r) = (k / cr, k % cr);
            all[(lh * n + r0 + r) * n_cols..][..row.len()].copy_from_slice(row);
        }
    }
}

//! What every engine (CPU or GPU) offers: a session over one model that holds a
//! KV cache and turns tokens into logits. `prefill` takes a whole prompt in one
//! pass, `decode` one token; `rewind` and `fork` let callers branch. Each
//! engine's session implements [`EngineSession`]; `Session` holds one of them
//! and forwards to it in one place ([`each!`]).

use crate::cpu::CpuSession;
pub use crate::engine_session::{EngineSession, Kind};
use crate::error::Result;
#[cfg(feature = "gpu")]
use crate::gpu::GpuSession;
use crate::model::Config;
use crate::remote::RemoteSession;
use crate::step::{Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;

/// A model session on either engine.
pub enum Session {
    /// The reference engine: plain f32 Rust, also the browser fallback.
    Cpu(CpuSession),
    /// The wgpu engine: WGSL kernels, KV cache in GPU memory.
    #[cfg(feature = "gpu")]
    Gpu(GpuSession),
    /// The CPU engine in another thread (the page's Web Worker), reached
    /// through messages: the same numbers as `Cpu`, off the page's thread.
    Remote(RemoteSession),
}

/// `$body` with `$s` bound to whichever engine's session `$session` holds:
/// the one place `Session` looks at its variants to forward.
macro_rules! each {
    ($session:expr, $s:ident => $body:expr) => {
        match $session {
            Session::Cpu($s) => $body,
            #[cfg(feature = "gpu")]
            Session::Gpu($s) => $body,
            Session::Remote($s) => $body,
        }
    };
}

impl From<CpuSession> for Session {
    fn from(s: CpuSession) -> Session {
        Session::Cpu(s)
    }
}

#[cfg(feature = "gpu")]
impl From<GpuSession> for Session {
    fn from(s: GpuSession) -> Session {
        Session::Gpu(s)
    }
}

impl From<RemoteSession> for Session {
    fn from(s: RemoteSession) -> Session {
        Session::Remote(s)
    }
}

impl Session {
    /// Which engine this is (for what the page and the bench say, not to
    /// reach past the session).
    pub fn kind(&self) -> Kind {
        each!(self, s => EngineSession::kind(s))
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        each!(self, s => EngineSession::config(s))
    }

    /// The same session keeping only what `policy` keeps in its KV cache
    /// (before any token), on every engine.
    pub fn with_kv_policy(self, policy: crate::kv_policy::KvPolicy) -> Result<Session> {
        if self.pos() != 0 {
            return Err(crate::EngineError::Setting(
                "a cache policy is chosen before the first token".into(),
            ));
        }
        policy.check(self.config())?;
        each!(self, s => EngineSession::under(s, policy).map(Session::from))
    }

    /// What this session's KV cache keeps.
    pub fn kv_policy(&self) -> crate::kv_policy::KvPolicy {
        each!(self, s => EngineSession::policy(s))
    }

    /// The position of the token in each KV cache slot, in slot order
    /// (every position so far under `full`), and the attention each held
    /// slot has received so far (a heavy-hitter cache's totals, read from
    /// the engine that sums them; else empty).
    pub async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)> {
        each!(self, s => EngineSession::slots(s).await)
    }

    /// Tokens held in the KV cache: the position the next token will take.
    pub fn pos(&self) -> usize {
        each!(self, s => EngineSession::pos(s))
    }

    /// Runs `tokens` at positions `pos..pos + len` in one pass; returns logits
    /// `(rows, vocab_size)` flattened, with rows as `wanted` says.
    pub async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        each!(self, s => EngineSession::prefill(s, tokens, wanted).await)
    }

    /// [`prefill`](Self::prefill), also returning what `look` asks for: the
    /// residual stream after the embedding and every block (the logit lens
    /// decodes it with [`crate::lessons::lens::logits`]) and every layer's attention
    /// weights (see [`Inspection`] for the shapes). Plain prefills and decode
    /// steps never pay for it.
    pub async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        each!(self, s => EngineSession::prefill_inspected(s, tokens, wanted, look).await)
    }

    /// Runs one token through the cached context; returns its `(vocab_size)` logits.
    pub async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        each!(self, s => EngineSession::decode(s, token).await)
    }

    /// [`decode`](Self::decode) for a caller that needs only the greedy
    /// token (`sample::argmax` of the logits): the GPU engine finds it on the
    /// device and reads back a few hundred bytes instead of the logits.
    pub async fn decode_greedy(&mut self, token: u32) -> Result<u32> {
        each!(self, s => EngineSession::decode_greedy(s, token).await)
    }

    /// One step the way a model without a KV cache takes it, for the cost
    /// lessons only: the whole sequence so far (`history`, ending with the
    /// new token) runs again as one pass from position 0 and its last row is
    /// kept — every step recomputes every earlier token's keys and values.
    /// Same logits as `decode` up to rounding.
    pub async fn decode_without_cache(&mut self, history: &[u32]) -> Result<Vec<f32>> {
        self.rewind(0)?;
        self.prefill(history, Wanted::Last).await
    }

    /// A prompt fed through the decode path one token at a time (no batched
    /// prompt pass): the last token's logits, as `prefill` gives them, and
    /// the summed cost of the `tokens.len()` steps.
    pub async fn prefill_by_decode(&mut self, tokens: &[u32]) -> Result<(Vec<f32>, StepStats)> {
        let Some((&last, first)) = tokens.split_last() else {
            return Err(crate::error::EngineError::NoTokens);
        };
        let mut stats = StepStats::default();
        for &token in first {
            self.decode(token).await?;
            stats.add(self.last_stats());
            // A loop of steps on the page's own CPU engine would hold its thread.
            each!(&*self, s => EngineSession::pause(s).await);
        }
        let logits = self.decode(last).await?;
        stats.add(self.last_stats());
        Ok((logits, stats))
    }

    /// Goes back to position `to`: later cache rows are ignored and overwritten.
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        each!(self, s => EngineSession::rewind(s, to))
    }

    /// A second session with a copy of this one's KV cache (on the GPU: copied GPU-to-GPU).
    pub fn fork(&self) -> Result<Session> {
        each!(self, s => EngineSession::fork(s).map(Session::from))
    }

    /// Takes `src`'s KV cache rows and position into this session's own
    /// cache (same model, same engine). Returns the bytes copied.
    pub fn copy_from(&mut self, src: &Session) -> Result<u64> {
        match (self, src) {
            (Session::Cpu(to), Session::Cpu(from)) => to.copy_from(from),
            #[cfg(feature = "gpu")]
            (Session::Gpu(to), Session::Gpu(from)) => to.copy_from(from),
            (Session::Remote(to), Session::Remote(from)) => to.copy_from(from),
            _ => {
                Err(crate::EngineError::Batch("a KV cache is copied only within one engine".into()))
            }
        }
    }

    /// Cost of the last `prefill` or `decode`.
    pub fn last_stats(&self) -> StepStats {
        each!(self, s => EngineSession::last_stats(s))
    }

    /// Bytes of KV cache the held positions take by the formula
    /// (`2 · n_layer · pos · kv_dim · 4`, kv_dim = n_kv_head · head_size); [`kv_bytes`](Self::kv_bytes) reads the cache itself.
    pub fn kv_bytes_by_formula(&self) -> usize {
        let c = self.config();
        2 * c.n_layer * self.pos() * c.kv_dim() * 4
    }

    /// The KV cache's bytes read from the cache itself: the rows held and
    /// the allocation (both engines allocate the whole context when a
    /// session opens, so decoding never allocates).
    pub async fn kv_bytes(&self) -> Result<KvBytes> {
        each!(self, s => EngineSession::kv_bytes(s).await)
    }

    /// Waits until every decode step from now on runs the same way, so that
    /// timed steps compare: the CPU worker finishes choosing whether to use
    /// its coworker ([`RemoteModel::settle`](crate::remote::RemoteModel::settle));
    /// the other engines have no such choice.
    pub async fn settle(&self) -> Result<()> {
        each!(self, s => EngineSession::settle(s).await)
    }

    /// The bytes a decode step at the current position must read: the
    /// weights it uses (`Weights::decode_bytes`) and the KV cache's rows
    /// (keys and values of every layer for the tokens it attends to).
    pub fn step_reads(&self) -> (u64, u64) {
        self.step_reads_at(self.pos())
    }

    /// [`step_reads`](Self::step_reads) of a decode step at position `pos`:
    /// its query reads the `pos + 1` tokens so far, or as many as the cache's
    /// policy holds (a window of W reads W rows at any length).
    pub fn step_reads_at(&self, pos: usize) -> (u64, u64) {
        let weights = each!(self, s => EngineSession::decode_bytes(s));
        let c = self.config();
        let rows = self.kv_policy().budget().map_or(pos + 1, |b| b.min(pos + 1));
        let kv = crate::lessons::cost::kv_cache_bytes(
            c.n_layer as f64,
            c.n_kv_head as f64,
            c.head_size as f64,
            4.0,
            rows as f64,
            1.0,
        );
        (weights, kv as u64)
    }

    /// How the weight matrices are stored, and the bytes all weights take.
    pub fn weights(&self) -> (Format, u64) {
        each!(self, s => EngineSession::weights(s))
    }

    /// How long the GPU engine took to compile its pipelines when the model
    /// loaded (the CPU engine compiles nothing).
    pub fn pipeline_compile_ms(&self) -> Option<f64> {
        each!(self, s => EngineSession::pipeline_compile_ms(s))
    }

    /// The CPU engine's session, if this is one.
    pub(crate) fn as_cpu(&mut self) -> Option<&mut CpuSession> {
        if let Session::Cpu(s) = self {
            return Some(s);
        }
        None
    }

    /// The worker's session, if this is one.
    pub(crate) fn as_remote(&mut self) -> Option<&mut RemoteSession> {
        if let Session::Remote(s) = self {
            return Some(s);
        }
        None
    }

    /// The GPU engine's session, if this is one.
    #[cfg(feature = "gpu")]
    pub(crate) fn as_gpu(&mut self) -> Option<&mut GpuSession> {
        if let Session::Gpu(s) = self {
            return Some(s);
        }
        None
    }

    /// This engine's device measured: its memory copy rate and (on the GPU)
    /// what one more dispatch costs. Takes a few hundred milliseconds.
    pub async fn device_figures(&self) -> Result<crate::step::DeviceFigures> {
        each!(self, s => EngineSession::device_figures(s).await)
    }

    /// The cost record of each dispatch of a decode step at the current
    /// position, on the GPU engine (the CPU engines dispatch nothing).
    pub fn decode_costs(&self) -> Option<Vec<(crate::kernels::Kernel, crate::kernels::Cost)>> {
        each!(self, s => EngineSession::decode_costs(s))
    }

    /// Each kernel of a decode step (`prefill`: of a prefill of that many
    /// tokens) timed alone on the GPU (see `GpuSession::kernel_times`);
    /// `None` on the CPU engines and without timestamp queries.
    #[cfg(feature = "gpu")]
    pub async fn kernel_times(
        &self,
        prefill: Option<usize>,
        repeats: u32,
    ) -> Result<Option<Vec<crate::gpu::KernelTime>>> {
        if let Session::Gpu(s) = self {
            return s.kernel_times(prefill, repeats).await;
        }
        Ok(None)
    }

    /// A short name of the engine and device, for headers and bench output.
    pub fn backend_name(&self) -> String {
        each!(self, s => EngineSession::backend_name(s))
    }
}

//! What a session of any engine does — the CPU engine on this thread, the
//! GPU engine, the CPU engine in a worker — as one trait each implements
//! (`cpu/session_impl.rs`, `gpu/session_impl.rs`, `remote/session_impl.rs`).
//! [`Session`](crate::Session) holds one of them and forwards to it in one
//! place; what only one engine can do stays on that engine's type.

use crate::error::Result;
use crate::kernels::{Cost, Kernel};
use crate::kv_policy::KvPolicy;
use crate::model::Config;
use crate::step::{DeviceFigures, Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;

/// Which engine a session runs on: for callers that present it (the
/// page's stats, the bench's labels), never to reach past the trait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The CPU engine on this thread (natively, or the page's own).
    Cpu,
    /// The wgpu engine.
    Gpu,
    /// The CPU engine in another thread (the page's worker).
    Worker,
}

/// One engine's session over one model: a KV cache, and tokens in, logits out.
#[allow(async_fn_in_trait)] // sessions stay on their thread: no Send bound wanted
pub trait EngineSession: Sized {
    /// Which engine this is.
    fn kind(&self) -> Kind;
    /// The model's hyper-parameters.
    fn config(&self) -> &Config;
    /// Tokens held in the KV cache: the position the next token takes.
    fn pos(&self) -> usize;
    /// What its KV cache keeps.
    fn policy(&self) -> KvPolicy;
    /// The same session keeping only what `policy` keeps (before any token).
    fn under(self, policy: KvPolicy) -> Result<Self>;
    /// The position of the token in each cache slot, and the attention each
    /// held slot has received (a heavy-hitter cache's; else empty).
    async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)>;
    /// `tokens` at positions `pos..` in one pass, with what `look` asks for.
    async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection>;
    /// `tokens` in one pass: logits `(rows, vocab_size)` as `wanted` says
    /// (an engine with a faster path for a plain prefill has its own).
    async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        Ok(self.prefill_inspected(tokens, wanted, Look::default()).await?.logits)
    }
    /// One token through the cached context: its `(vocab_size)` logits.
    async fn decode(&mut self, token: u32) -> Result<Vec<f32>>;
    /// [`decode`](Self::decode) for a caller that needs only the greedy
    /// token (`sample::argmax` of the logits).
    async fn decode_greedy(&mut self, token: u32) -> Result<u32> {
        Ok(crate::sample::argmax(&self.decode(token).await?))
    }
    /// Goes back to position `to`.
    fn rewind(&mut self, to: usize) -> Result<()>;
    /// A second session with a copy of this one's KV cache.
    fn fork(&self) -> Result<Self>;
    /// Takes `src`'s KV cache rows and position (same model): the bytes copied.
    fn copy_from(&mut self, src: &Self) -> Result<u64>;
    /// Cost of the last prefill or decode.
    fn last_stats(&self) -> StepStats;
    /// The KV cache's bytes, read from the cache itself.
    async fn kv_bytes(&self) -> Result<KvBytes>;
    /// Bytes of weights a decode step reads (`Weights::decode_bytes`).
    fn decode_bytes(&self) -> u64;
    /// How the weight matrices are stored, and the bytes all weights take.
    fn weights(&self) -> (Format, u64);
    /// This engine's device measured (see [`DeviceFigures`]).
    async fn device_figures(&self) -> Result<DeviceFigures>;
    /// A short name of the engine and device, for headers and bench output.
    fn backend_name(&self) -> String;
    /// Waits until timed steps compare (the worker chooses its coworker first).
    async fn settle(&self) -> Result<()> {
        Ok(())
    }
    /// The page's turn between steps of a loop over tokens (the in-page CPU engine's).
    async fn pause(&self) {}
    /// Milliseconds its pipelines took to compile (the GPU engine's).
    fn pipeline_compile_ms(&self) -> Option<f64> {
        None
    }
    /// The cost record of each dispatch of a decode step here (the GPU engine's).
    fn decode_costs(&self) -> Option<Vec<(Kernel, Cost)>> {
        None
    }
}

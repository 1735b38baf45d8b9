//! The vocabulary every engine shares, in a leaf module that both `cpu`,
//! `gpu` and `session` import (so none of them imports another): which
//! logits a pass returns, what a pass cost, the shared model handle and the
//! input checks both engines make before any work.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::model::Model;

/// Which rows of logits a forward pass returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Wanted {
    /// Only the last token's logits: all that generation needs.
    Last,
    /// One row per input token (for checks against a reference).
    All,
}

/// What one forward call cost. The GPU engine counts its own work; the CPU
/// engine reports zero dispatches and submits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// Tokens that went through the model.
    pub tokens: usize,
    /// Compute dispatches recorded.
    pub dispatches: usize,
    /// Queue submits.
    pub submits: usize,
    /// Bytes written from CPU to GPU (token ids, kernel parameters).
    pub bytes_written: usize,
    /// Bytes read back from GPU to CPU (logits).
    pub bytes_read: usize,
    /// Wall time of the call, including the readback.
    pub wall_ms: f64,
    /// The device's own time for the call's compute passes, from GPU
    /// timestamp queries; `None` where there are none (the CPU engine, or an
    /// adapter without the feature).
    pub gpu_ms: Option<f64>,
    /// Whether a coworker computed half of the call's big products (the
    /// browser's CPU worker, where it has one and it pays: `remote::Pace`).
    #[serde(default)]
    pub coworker: bool,
    /// Of `wall_ms`, on the GPU engine: writing the parameters, encoding the
    /// passes and submitting them; waiting from the submit until the results
    /// could be read (the GPU's work, and the driver's round trip); copying
    /// the results out. The rest of the wall time is the engine's own
    /// bookkeeping (0 on the CPU engines, which submit nothing).
    #[serde(default)]
    pub submit_ms: f64,
    #[serde(default)]
    pub wait_ms: f64,
    #[serde(default)]
    pub readback_ms: f64,
}

impl StepStats {
    /// The cost of `self` and `other` together (several calls as one).
    pub fn add(&mut self, other: StepStats) {
        // GPU time is known for the sum only if known for every part.
        let empty = *self == StepStats::default();
        self.gpu_ms = match (empty, self.gpu_ms, other.gpu_ms) {
            (true, _, b) => b,
            (false, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.tokens += other.tokens;
        self.dispatches += other.dispatches;
        self.submits += other.submits;
        self.bytes_written += other.bytes_written;
        self.bytes_read += other.bytes_read;
        self.wall_ms += other.wall_ms;
        self.submit_ms += other.submit_ms;
        self.wait_ms += other.wait_ms;
        self.readback_ms += other.readback_ms;
    }
}

/// A session's KV cache as its engine holds it, read from the cache itself
/// (not from the formula `2 · n_layer · n_embd · 4 · pos`, which the lesson
/// shows beside it): the CPU engine's vectors' lengths and capacities, the GPU
/// engine's buffer sizes, the worker's own cache across the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvBytes {
    /// Bytes of the rows that hold a token's keys and values.
    pub in_use: u64,
    /// Bytes allocated for the cache (the whole context, when the session opened).
    pub allocated: u64,
}

/// Figures of the device an engine runs on (the cost lessons' decomposition
/// of a step, and the bench's share of the device's bandwidth).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceFigures {
    /// Bytes per second of a large memory copy (which reads and writes every byte).
    pub copy_bytes_per_s: f64,
    /// Bytes per second of reading a large buffer and writing almost nothing
    /// (`block_sum` on the GPU, a sum loop on the CPU): the best rate at
    /// which a decode step can stream its weights.
    pub read_bytes_per_s: f64,
    /// Milliseconds one more dispatch adds to a GPU compute pass (`None` on
    /// the CPU engine, which has no dispatches).
    pub dispatch_ms: Option<f64>,
}

/// What a prefill should also hand back, for the views that look inside.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Look {
    /// The residual stream after the embedding and after every block (the logit lens).
    pub residuals: bool,
    /// Every layer's attention weights.
    pub attention: bool,
}

/// A prefill's logits and what its [`Look`] asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inspection {
    pub logits: Vec<f32>,
    /// `(n_layer + 1, tokens, n_embd)`: the embedding (block 0's input), then
    /// every block's output, the last one before `ln_f`.
    pub residuals: Option<Vec<f32>>,
    /// `(n_layer, n_head, tokens, pos0 + tokens)`: row i of a head is query
    /// i's weights over every key so far; 0 for the keys after it.
    pub attention: Option<Vec<f32>>,
}

/// Shared by both engines: the model is read-only and outlives every session.
pub type SharedModel = Arc<Model>;

/// The checks both engines make before any work: non-empty, ids in range,
/// room in the context.
pub(crate) fn check_input(model: &Model, pos: usize, tokens: &[u32]) -> Result<()> {
    if tokens.is_empty() {
        return Err(EngineError::NoTokens);
    }
    model.check_tokens(tokens)?;
    let n_positions = model.config.n_positions;
    if pos + tokens.len() > n_positions {
        return Err(EngineError::ContextOverflow { got: pos + tokens.len(), n_positions });
    }
    Ok(())
}

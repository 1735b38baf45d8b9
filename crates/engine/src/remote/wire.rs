//! What the page and the CPU worker say to each other. A message is a small
//! header, sent as JSON, and a float payload (`(rows, vocab_size)` logits, or
//! an inspection's arrays one after another) sent beside it as a
//! `Float32Array`, so 50,257 logits cross as one copy, not a JSON list.

use serde::{Deserialize, Serialize};

use crate::step::{DeviceFigures, KvBytes, Look, StepStats, Wanted};

/// A session in the worker, named by the page (ids are never reused).
pub type SessionId = u32;

/// The page's requests, handled by [`super::Host`] in the order sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// A fresh session (empty KV cache) on the loaded model with its
    /// matrices in `format` (by name; the loaded model's own, or a variant
    /// made from it as the page makes it: the quantization lesson), its
    /// cache keeping what `policy` keeps (by its `kv_policy` name), its K/V
    /// heads pooled into `groups` groups (`Model::with_kv_groups`; the
    /// model's head count: as loaded), cut after its first `layers` blocks
    /// (`Model::first_blocks`, a self-speculation draft; all: as loaded),
    /// its int8 or int4 matrices multiplying 8-bit activations when
    /// `int8_activations` (`Weights::use_int8_activations`).
    Open {
        id: SessionId,
        format: String,
        int8_activations: bool,
        policy: String,
        groups: usize,
        layers: usize,
    },
    /// `tokens` in one pass from the session's position.
    Prefill { id: SessionId, tokens: Vec<u32>, wanted: Wanted, look: Look },
    /// One token through the cached context.
    Decode { id: SessionId, token: u32 },
    /// One token for each of `ids` that has one, in one pass (`engine::Batch`).
    Batch { ids: Vec<SessionId>, tokens: Vec<Option<u32>> },
    /// Back to position `to`.
    Rewind { id: SessionId, to: usize },
    /// Session `id` becomes a copy of session `from` (a new one if `id` is new).
    Copy { id: SessionId, from: SessionId },
    /// The session is gone: its KV cache is freed.
    Close { id: SessionId },
    /// The worker's copy and read rates (the cost lessons' device figures).
    DeviceFigures,
    /// Session `id`'s KV cache bytes, read from the worker's cache.
    KvBytes { id: SessionId },
    /// Which position each of session `id`'s cache slots holds, and (in the
    /// payload) a heavy-hitter cache's attention totals.
    Slots { id: SessionId },
    /// Finish choosing whether decode steps run with the coworker, on a
    /// scratch session (the timing lessons wait for it: [`super::pace`]).
    Settle,
}

impl Request {
    /// Whether the page waits for an answer. The others change state only;
    /// an error they meet is given to the session's next awaited request.
    pub fn awaited(&self) -> bool {
        matches!(
            self,
            Request::Prefill { .. }
                | Request::Decode { .. }
                | Request::Batch { .. }
                | Request::DeviceFigures
                | Request::KvBytes { .. }
                | Request::Slots { .. }
                | Request::Settle
        )
    }
}

/// The worker's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Reply {
    /// Logits in the payload, and what the pass cost in the worker.
    Logits { stats: StepStats },
    /// An inspected prefill: the payload holds the logits, then the residuals
    /// and the attention weights when asked for, with these lengths.
    Inspected {
        stats: StepStats,
        logits: usize,
        residuals: Option<usize>,
        attention: Option<usize>,
    },
    /// The worker's device figures.
    Figures { figures: DeviceFigures },
    /// A session's KV cache bytes.
    KvBytes { bytes: KvBytes },
    /// A session's cache slots: the position in each (the totals, if any, in the payload).
    Slots { held: Vec<usize> },
    /// The way decode steps run from now on: with the coworker or alone
    /// (`None`: the worker has no coworker, so there was nothing to choose).
    Settled { coworker: Option<bool> },
    /// The request (or one before it on the same session) failed.
    Failed { message: String },
}

/// A header with its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub reply: Reply,
    pub floats: Vec<f32>,
}

impl Answer {
    /// A reply with no payload.
    pub fn bare(reply: Reply) -> Answer {
        Answer { reply, floats: Vec::new() }
    }
}

/// The header as JSON (what crosses the boundary).
pub fn encode<T: Serialize>(header: &T) -> String {
    // Plain enums of numbers, strings and options: serialising cannot fail.
    serde_json::to_string(header).unwrap_or_default()
}

/// A header back from JSON; a message that is not one is an error, not a panic.
pub fn decode<T: for<'de> Deserialize<'de>>(json: &str) -> crate::Result<T> {
    serde_json::from_str(json).map_err(|e| {
        crate::EngineError::Remote(format!("a message the CPU worker cannot read: {e}"))
    })
}

//! `shaders/lm_head_split.wgsl`: the LM head on real GPUs, each vocabulary
//! row read by `WG_SPLIT / ROWS` invocations side by side.

use super::cost::{invocations, rounds};
pub use super::lm_head::Params;
use super::lm_head::{self, head_cost};
use super::{At, Cost, Launch, WG_SPLIT};
use crate::storage::format::Format;

/// Vocabulary rows per workgroup (the shader's `override ROWS`).
pub const ROWS: u32 = 8;

/// Words of its row an invocation loads before using any (`WORDS` in the shader).
pub const WORDS: u64 = 4;

/// Invocations per vocabulary row.
const LANES: u32 = WG_SPLIT / ROWS;

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]: lm_head's twin (the
/// GPU adds each dot product's terms in another order).
pub use super::lm_head::run_cpu;

/// One dispatch: the shard of the head holding vocabulary rows `v0..v0 + n_vocab`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub v0: u32,
    pub n_vocab: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        lm_head::Shape { v0: self.v0, n_vocab: self.n_vocab }.params_at(at)
    }

    /// ROWS vocabulary rows of one logits row per workgroup.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_vocab.div_ceil(ROWS), p.n_out, 1]
    }

    /// x's row staged (one round per 256 elements), then the lane's words of
    /// the row, [`WORDS`] a round (one element a round where rows straddle words).
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let e = u64::from(p.n_embd);
        let per_word = format.per_word() as u64;
        let dot = match e % per_word {
            0 => rounds((e / per_word).div_ceil(u64::from(LANES)), WORDS),
            _ => e.div_ceil(u64::from(LANES)),
        };
        let calls = invocations(self.workgroups(p, format), WG_SPLIT);
        head_cost(p, calls, rounds(e, u64::from(WG_SPLIT)) + dot, true, format)
    }
}

//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes};
use super::{At, Cost, Launch, WG};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `LmHeadParams` (shaders/lm_head_params.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_out: u32,
    pub row0: u32,
    pub n_embd: u32,
    pub vocab_size: u32,
    /// First vocabulary row of this shard of the head (0 when unsplit).
    pub v0: u32,
    /// Vocabulary rows in this shard.
    pub n_vocab: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Vocabulary rows per invocation of shaders/lm_head.wgsl: the four lanes of
/// its `vec4` of sums (its `const ROWS`).
pub const ROWS: u32 = 4;

/// Partial sums of one dot product: lane j sums the products k ≡ j (mod 16).
pub const LANES: usize = 16;

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out, where
/// `lm_head` is the shard of rows `v0..v0 + lm_head.rows` of the head and
/// logits rows are `vocab_size` wide (the other shards write the rest).
///
/// The reference, as plain loops: each dot product is [`LANES`] partial sums
/// (lane j adds the products k ≡ j mod 16 in order of k) added pairwise in a
/// fixed order. The CPU engine runs the same sums faster
/// ([`fast::lm_head`](crate::fast::lm_head)), tested against this bit for bit.
pub fn run_cpu(
    x: &[f32],        // (n_rows, n_embd)
    lm_head: &Matrix, // (n_vocab, n_embd) in its format: rows v0.. of the head
    v0: usize,
    vocab_size: usize,
    row0: usize,
    n_out: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    let (n_vocab, e) = (lm_head.rows, lm_head.cols);
    for r in 0..n_out {
        let x = &x[(row0 + r) * e..][..e];
        for v in 0..n_vocab {
            let mut lanes = [0.0f32; LANES];
            for (kk, &xk) in x.iter().enumerate() {
                lanes[kk % LANES] += xk * lm_head.get(v * e + kk);
            }
            let quad = |i: usize| (lanes[i] + lanes[i + 1]) + (lanes[i + 2] + lanes[i + 3]);
            logits[r * vocab_size + v0 + v] = (quad(0) + quad(4)) + (quad(8) + quad(12));
        }
    }
}

/// One dispatch: the shard of the head holding vocabulary rows `v0..v0 + n_vocab`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub v0: u32,
    pub n_vocab: u32,
}

impl Shape {
    /// This shard's `Params` for the wanted rows at `at`.
    pub fn params_at(&self, at: &At) -> Params {
        Params {
            n_out: at.lm_rows,
            row0: at.lm_row0,
            n_embd: at.n_embd(),
            vocab_size: at.config.vocab_size as u32,
            v0: self.v0,
            n_vocab: self.n_vocab,
            _pad0: 0,
            _pad1: 0,
        }
    }
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        self.params_at(at)
    }

    /// Dispatch size: one thread per (token of the shard, [`ROWS`] rows).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_vocab.div_ceil(ROWS).div_ceil(super::WG), p.n_out, 1]
    }

    /// One invocation per [`ROWS`] vocabulary rows, one round per element
    /// of them: neighbouring invocations read rows n_embd apart (not coalesced).
    fn cost(&self, p: &Params, format: Format) -> Cost {
        head_cost(
            p,
            invocations(self.workgroups(p, format), WG),
            u64::from(p.n_embd),
            false,
            format,
        )
    }
}

/// The cost of a head shard's dispatch reading its rows in `dot` rounds.
pub fn head_cost(p: &Params, invocations: u64, dot: u64, coalesced: bool, f: Format) -> Cost {
    let (rows, e) = (u64::from(p.n_out), u64::from(p.n_embd));
    let weights = matrix_bytes(f, u64::from(p.n_vocab), e, Channels::Rows);
    Cost::plain(invocations, dot, floats(rows * e)).with_weights(weights, coalesced)
}

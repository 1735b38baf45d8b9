//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
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

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out, where
/// `lm_head` is the shard of rows `v0..v0 + lm_head.rows` of the head and
/// logits rows are `vocab_size` wide (the other shards write the rest). Each
/// dot product is sixteen partial sums (lane j: products k ≡ j mod 16)
/// combined pairwise (the loops: [`fast::lm_head`](crate::fast::lm_head)).
pub fn run_cpu(
    x: &[f32],        // (n_rows, n_embd)
    lm_head: &Matrix, // (n_vocab, n_embd) in its format: rows v0.. of the head
    v0: usize,
    vocab_size: usize,
    row0: usize,
    n_out: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    crate::fast::lm_head::run(x, lm_head, v0, vocab_size, row0, n_out, logits)
}

/// Dispatch size: one thread per (token of the shard, row).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n_vocab.div_ceil(super::WG), p.n_out, 1]
}

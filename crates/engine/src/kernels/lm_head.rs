//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

use super::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_out: u32,
    pub row0: u32,
    pub n_embd: u32,
    pub vocab_size: u32,
}

/// logits[r, v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out
pub fn run_cpu(
    x: &[f32],        // (n_rows, n_embd)
    lm_head: &Matrix, // (vocab_size, n_embd) in its format
    row0: usize,
    n_out: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    let (vocab_size, n_embd) = (lm_head.rows, lm_head.cols);
    let mut buf = Vec::new();
    // Row-outer: each packed row of the head is unpacked once for all n_out rows.
    for v in 0..vocab_size {
        let wr = lm_head.row(v, &mut buf);
        for r in 0..n_out {
            let xr = &x[(row0 + r) * n_embd..][..n_embd];
            logits[r * vocab_size + v] = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
        }
    }
}

/// Dispatch size: one thread per (token, row).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.vocab_size.div_ceil(super::WG), p.n_out, 1]
}

//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

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
    x: &[f32],       // (n_rows, n_embd)
    lm_head: &[f32], // (vocab_size, n_embd)
    row0: usize,
    n_out: usize,
    n_embd: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    let vocab_size = lm_head.len() / n_embd;
    for r in 0..n_out {
        let xr = &x[(row0 + r) * n_embd..][..n_embd];
        for (v, out) in logits[r * vocab_size..][..vocab_size].iter_mut().enumerate() {
            let wr = &lm_head[v * n_embd..][..n_embd];
            *out = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
        }
    }
}

/// Dispatch size: one thread per (token, row).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.vocab_size.div_ceil(super::WG), p.n_out, 1]
}

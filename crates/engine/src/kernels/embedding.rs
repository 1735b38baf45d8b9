//! `shaders/embedding.wgsl`: token + position embedding.

use bytemuck::{Pod, Zeroable};

use super::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_embd: u32,
    pub pos0: u32,
    pub _pad: u32,
}

/// x[row, :] = wte[tokens[row], :] + wpe[pos0 + row, :]
pub fn run_cpu(
    tokens: &[u32], // (n_rows)
    wte: &Matrix,   // (vocab_size, n_embd) in its format
    wpe: &[f32],    // (n_positions, n_embd)
    pos0: usize,
    x: &mut [f32], // (n_rows, n_embd)
) {
    let n_embd = wte.cols;
    let mut buf = Vec::new();
    for (row, &token) in tokens.iter().enumerate() {
        let te = wte.row(token as usize, &mut buf);
        let pe = &wpe[(pos0 + row) * n_embd..][..n_embd];
        for (c, out) in x[row * n_embd..][..n_embd].iter_mut().enumerate() {
            *out = te[c] + pe[c];
        }
    }
}

/// Dispatch size: one thread per element.
pub fn workgroups(p: &Params) -> [u32; 3] {
    super::grid_1d(p.n_rows as usize * p.n_embd as usize)
}

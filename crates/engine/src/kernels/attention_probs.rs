//! `shaders/attention_probs.wgsl`: the attention weights themselves, written
//! only when a view asks for them (the forward pass never stores them).

use bytemuck::{Pod, Zeroable};

use super::attention;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub pos0: u32,
    pub n_embd: u32,
    pub head_size: u32,
    pub scale: f32,
    pub n_cols: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// probs[h, row, j] = softmax over j ≤ pos0 + row of (q · k_j · scale); 0 for later j.
#[allow(clippy::too_many_arguments)] // mirrors the shader's bindings one to one
pub fn run_cpu(
    qkv: &[f32],       // (n_rows, 3 * n_embd)
    key_cache: &[f32], // (n_positions, n_embd)
    n_embd: usize,
    head_size: usize,
    pos0: usize,
    scale: f32,
    probs: &mut [f32], // (n_head, n_rows, pos0 + n_rows)
) {
    let n_rows = qkv.len() / (3 * n_embd);
    let n_cols = pos0 + n_rows;
    let mut att = Vec::new(); // (n_keys) weights
    for (row, r) in qkv.chunks_exact(3 * n_embd).enumerate() {
        let n_keys = pos0 + row + 1;
        for (head, h0) in (0..n_embd).step_by(head_size).enumerate() {
            let q = &r[h0..h0 + head_size];
            let sum = attention::weights(q, key_cache, n_embd, h0, n_keys, scale, &mut att);
            let out = &mut probs[(head * n_rows + row) * n_cols..][..n_cols];
            for (o, a) in out.iter_mut().zip(att.iter().chain(std::iter::repeat(&0.0))) {
                *o = a / sum;
            }
        }
    }
}

/// Dispatch size: one workgroup per (row, head).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n_rows, p.n_embd / p.head_size, 1]
}

//! `shaders/kv_write.wgsl`: k and v of new tokens go into the KV cache.

use bytemuck::{Pod, Zeroable};

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_embd: u32,
    pub pos0: u32,
    /// First row of `qkv` the dispatch reads (a batch's sequence).
    pub row0: u32,
}

/// key_cache[pos0 + row] = k(row); value_cache[pos0 + row] = v(row)
/// The shader's `row0` is the caller's slicing here: pass rows `row0..` of `qkv`.
pub fn run_cpu(
    qkv: &[f32], // (n_rows, 3 * n_embd)
    n_embd: usize,
    pos0: usize,
    key_cache: &mut [f32],   // (n_positions, n_embd)
    value_cache: &mut [f32], // (n_positions, n_embd)
) {
    for (row, r) in qkv.chunks_exact(3 * n_embd).enumerate() {
        let dst = (pos0 + row) * n_embd;
        key_cache[dst..dst + n_embd].copy_from_slice(&r[n_embd..2 * n_embd]);
        value_cache[dst..dst + n_embd].copy_from_slice(&r[2 * n_embd..]);
    }
}

/// Dispatch size: one thread per element of k (and of v).
pub fn workgroups(p: &Params) -> [u32; 3] {
    super::grid_1d(p.n_rows as usize * p.n_embd as usize)
}

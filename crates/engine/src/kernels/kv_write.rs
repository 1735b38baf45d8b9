//! `shaders/kv_write.wgsl`: k and v of new tokens go into the KV cache.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::{At, Cost, Heads, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_embd: u32,
    pub slot0: u32,
    /// First row of `qkv` the dispatch reads (a batch's sequence).
    pub row0: u32,
    pub head_size: u32,
    /// Query heads per K/V head.
    pub group: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// key_cache[slot0 + row] = k(row); value_cache[slot0 + row] = v(row): a
/// row of qkv holds one K and one V head per group of query heads.
/// The shader's `row0` is the caller's slicing here: pass rows `row0..` of `qkv`.
pub fn run_cpu(
    qkv: &[f32], // (n_rows, n_embd + 2 * kv_dim): q | k | v
    heads: Heads,
    slot0: usize,
    key_cache: &mut [f32],   // (n_positions, kv_dim)
    value_cache: &mut [f32], // (n_positions, kv_dim)
) {
    let (e, kv_dim) = (heads.n_embd, heads.kv_dim());
    for (row, r) in qkv.chunks_exact(heads.qkv_width()).enumerate() {
        let dst = (slot0 + row) * kv_dim;
        key_cache[dst..dst + kv_dim].copy_from_slice(&r[e..e + kv_dim]);
        value_cache[dst..dst + kv_dim].copy_from_slice(&r[e + kv_dim..]);
    }
}

/// One dispatch: the pass's rows (a batch's sequence: its one row) into the cache.
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            n_rows: at.n_rows,
            n_embd: at.n_embd(),
            slot0: at.slot0,
            row0: at.row0,
            head_size: at.head_size(),
            group: at.group(),
            _pad0: 0,
            _pad1: 0,
        }
    }

    /// Dispatch size: one thread per cached element of k (and of v).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        super::grid_1d(p.n_rows as usize * (p.n_embd / p.group.max(1)) as usize)
    }

    /// Copies: one round, reading the new keys and values (writing the cache).
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let n = u64::from(p.n_rows) * u64::from(p.n_embd / p.group.max(1));
        Cost::one_round(self.workgroups(p, Format::F32), floats(2 * n))
    }
}

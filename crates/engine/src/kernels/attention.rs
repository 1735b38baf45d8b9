//! `shaders/attention.wgsl`: causal multi-head attention over the KV cache.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, rounds};
use super::{At, Cost, Heads, Launch, WG};
use crate::fast::attention::{exp_sum, mix};
use crate::storage::format::Format;

/// Largest head the shader holds in workgroup memory.
pub const MAX_HEAD_SIZE: usize = 256;

/// Mirror of the WGSL `AttentionParams` (shaders/attention_params.wgsl),
/// which attention_probs and attention_split read too.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub keys0: u32,
    pub n_embd: u32,
    pub head_size: u32,
    pub scale: f32,
    /// First row of `qkv` and `y` the dispatch works on (a batch's sequence).
    pub row0: u32,
    /// Query heads per K/V head.
    pub group: u32,
    pub _pad: u32,
}

/// y[row, head] = softmax over j ≤ keys0 + row of (q · k_j · scale), applied to v_j
/// (k and v of the head's K/V head: `heads.kv0`).
/// The shader's `row0` is the caller's slicing here: pass rows `row0..` of `qkv` and `y`.
#[allow(clippy::too_many_arguments)] // mirrors the shader's bindings one to one
pub fn run_cpu(
    qkv: &[f32],         // (n_rows, n_embd + 2 * kv_dim)
    key_cache: &[f32],   // (n_positions, kv_dim)
    value_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32], // (n_rows, n_embd)
) {
    let Heads { n_embd, head_size, .. } = heads;
    let kv_dim = heads.kv_dim();
    let mut att = Vec::new(); // (n_keys) scores, then weights
    for (row, r) in qkv.chunks_exact(heads.qkv_width()).enumerate() {
        let n_keys = keys0 + row + 1;
        for (h, h0) in (0..n_embd).step_by(head_size).enumerate() {
            let q = &r[h0..h0 + head_size];
            let k0 = heads.kv0(h);
            let sum = weights(q, key_cache, kv_dim, k0, n_keys, scale, &mut att);
            let out = &mut y[row * n_embd + h0..][..head_size];
            mix(&att, sum, value_cache, kv_dim, k0, out);
        }
    }
}

/// Keys whose dot products [`weights`] sums side by side.
const KEYS: usize = 8;

/// One query's unnormalised softmax weights `exp(q · k_j · scale − max)` over
/// keys `0..n_keys` of the K/V head starting at column `k0` of cache rows of
/// `kv_dim`, into `att`; returns
/// their sum (the weights are `att[j] / sum`). Shared with `attention_probs`,
/// so the weights a view shows are the ones the pass used.
pub fn weights(
    q: &[f32],         // (head_size) one row's query of this head
    key_cache: &[f32], // (n_positions, kv_dim)
    kv_dim: usize,
    k0: usize,
    n_keys: usize,
    scale: f32,
    att: &mut Vec<f32>, // (n_keys) out
) -> f32 {
    let head_size = q.len();
    let key = |j: usize| &key_cache[j * kv_dim + k0..][..head_size];
    att.clear();
    att.resize(n_keys, 0.0);
    // Eight keys at a time, each its own lane: every dot product is still
    // summed in order of d (from −0.0, as `sum` does), so the same bits, but
    // eight chains of adds are in flight, not one (a 256-token prefill spent
    // as long here as in its int4 matmuls).
    let mut blocks = att.chunks_exact_mut(KEYS);
    for (b, out) in (&mut blocks).enumerate() {
        let keys: [&[f32]; KEYS] = std::array::from_fn(|l| key(b * KEYS + l));
        let mut acc = [-0.0f32; KEYS];
        for (d, &qd) in q.iter().enumerate() {
            for (a, k) in acc.iter_mut().zip(&keys) {
                *a += qd * k[d];
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = a * scale;
        }
    }
    let done = n_keys - blocks.into_remainder().len();
    for (j, o) in att.iter_mut().enumerate().skip(done) {
        *o = q.iter().zip(key(j)).map(|(a, b)| a * b).sum::<f32>() * scale;
    }
    exp_sum(att)
}

/// One dispatch over every row of the pass (a batch's sequence: its one row), at layer scale `scale`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub scale: f32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            n_rows: at.n_rows,
            keys0: at.keys0,
            n_embd: at.n_embd(),
            head_size: at.head_size(),
            scale: self.scale,
            row0: at.row0,
            group: at.group(),
            _pad: 0,
        }
    }

    /// Dispatch size: one workgroup per (row, head).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_rows, p.n_embd / p.head_size, 1]
    }

    /// The last row's: per tile of WG keys, each invocation scores one key
    /// (head_size rounds, neighbours a row of the cache apart: not
    /// coalesced), then every invocation folds the tile's values (one round
    /// per key).
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let (hs, e) = (u64::from(p.head_size), u64::from(p.n_embd));
        let n_keys = u64::from(p.keys0 + p.n_rows);
        let kv = floats(2 * n_keys * e / u64::from(p.group.max(1)));
        Cost::plain(
            invocations(self.workgroups(p, Format::F32), WG),
            rounds(hs, u64::from(WG)) + n_keys.div_ceil(u64::from(WG)) * hs + n_keys,
            floats(u64::from(p.n_rows) * e),
        )
        .with_kv(kv, false)
    }
}

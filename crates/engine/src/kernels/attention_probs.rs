//! `shaders/attention_probs.wgsl`: the attention weights themselves, written
//! only when a view asks for them (the forward pass never stores them).

use super::cost::{floats, invocations, rounds};
use super::{attention, At, Cost, Heads, Launch, WG};
use crate::storage::format::Format;

/// Its uniform: attention's.
pub use super::attention::Params;

/// probs[h, row, j] = softmax over j ≤ keys0 + row of (q · k_j · scale); 0 for later j.
#[allow(clippy::too_many_arguments)] // mirrors the shader's bindings one to one
pub fn run_cpu(
    qkv: &[f32],       // (n_rows, n_embd + 2 * kv_dim)
    key_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    probs: &mut [f32], // (n_head, n_rows, keys0 + n_rows)
) {
    let Heads { n_embd, head_size, .. } = heads;
    let n_rows = qkv.len() / heads.qkv_width();
    let n_cols = keys0 + n_rows;
    let mut att = Vec::new(); // (n_keys) weights
    for (row, r) in qkv.chunks_exact(heads.qkv_width()).enumerate() {
        let n_keys = keys0 + row + 1;
        for (head, h0) in (0..n_embd).step_by(head_size).enumerate() {
            let q = &r[h0..h0 + head_size];
            let (kv_dim, k0) = (heads.kv_dim(), heads.kv0(head));
            let sum = attention::weights(q, key_cache, kv_dim, k0, n_keys, scale, &mut att);
            let out = &mut probs[(head * n_rows + row) * n_cols..][..n_cols];
            for (o, a) in out.iter_mut().zip(att.iter().chain(std::iter::repeat(&0.0))) {
                *o = a / sum;
            }
        }
    }
}

/// One dispatch: the weights of every row of a pass, at layer scale `scale`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub scale: f32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        attention::Shape { scale: self.scale }.params(at)
    }

    /// Dispatch size: one workgroup per (row, head).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_rows, p.n_embd / p.head_size, 1]
    }

    /// The last row's: each invocation scores every WG-th key (head_size
    /// rounds each, neighbours a row of the cache apart), then two more
    /// passes over its scores.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let (hs, e) = (u64::from(p.head_size), u64::from(p.n_embd));
        let n_keys = u64::from(p.keys0 + p.n_rows);
        let per_thread = n_keys.div_ceil(u64::from(WG));
        let kv = floats(n_keys * e / u64::from(p.group.max(1)));
        Cost::plain(
            invocations(self.workgroups(p, Format::F32), WG),
            rounds(hs, u64::from(WG)) + per_thread * (hs + 2),
            floats(u64::from(p.n_rows) * e),
        )
        .with_kv(kv, false)
    }
}

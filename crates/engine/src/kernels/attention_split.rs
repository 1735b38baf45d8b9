//! `shaders/attention_split.wgsl`: flash-decoding's first half on real GPUs:
//! the softmax partials of each chunk of [`CHUNK`] keys, every head.

use super::cost::{floats, invocations, rounds, UNROLL};
use super::{attention, At, Cost, Heads, Launch, WG_SPLIT};
use crate::storage::format::Format;

/// Keys per chunk (the shader's `override CHUNK`): two passes of
/// `WG_SPLIT / KEY_LANES` keys. 32, not 64: a chunk's serial steps (the
/// softmax loops, the rounds of values) halve, and up to 127 keys the
/// combine still reads one round of chunks.
pub const CHUNK: u32 = 32;

/// Invocations per key while scoring (`KEY_LANES` in the shader).
pub(crate) const KEY_LANES: u32 = 16;
/// Invocations per key while summing values (`DIM_LANES` in the shader).
pub(crate) const DIM_LANES: u32 = 64;
const _: () = assert!(CHUNK <= 4 * WG_SPLIT / KEY_LANES);

/// Its uniform: attention's.
pub use super::attention::Params;

/// Chunks of keys `0..=keys0` holds.
pub fn chunks(keys0: usize) -> usize {
    (keys0 + 1).div_ceil(CHUNK as usize)
}

/// Floats of one chunk's partials of one head: m, l, then head_size sums.
pub fn part_len(head_size: usize) -> usize {
    2 + head_size
}

/// For each chunk c of keys `0..=keys0` and head h, the softmax partials of the
/// query in `q_row` over that chunk's keys j:
/// `s_j = (q · scale) · k_j`, `m = max s_j`, `l = Σ exp(s_j − m)`,
/// `acc = Σ exp(s_j − m) v_j`, at `parts[(c · n_head + h) · (2 + head_size)..]`.
#[allow(clippy::too_many_arguments)] // mirrors the shader's bindings one to one
pub fn run_cpu(
    q_row: &[f32],       // (n_embd + 2 * kv_dim) the query's row of qkv
    key_cache: &[f32],   // (n_positions, kv_dim)
    value_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    parts: &mut [f32], // (chunks, n_head, 2 + head_size)
) {
    let Heads { n_embd, head_size, .. } = heads;
    let (n_head, chunk, kv_dim) = (n_embd / head_size, CHUNK as usize, heads.kv_dim());
    for c in 0..chunks(keys0) {
        let keys = c * chunk..((c + 1) * chunk).min(keys0 + 1);
        for h in 0..n_head {
            let (h0, k0) = (h * head_size, heads.kv0(h));
            let q: Vec<f32> = q_row[h0..h0 + head_size].iter().map(|v| v * scale).collect();
            let score = |j: usize| -> f32 {
                let k = &key_cache[j * kv_dim + k0..][..head_size];
                q.iter().zip(k).map(|(a, b)| a * b).sum()
            };
            let scores: Vec<f32> = keys.clone().map(score).collect();
            let m = scores.iter().fold(f32::MIN, |m, &s| m.max(s));
            let out = &mut parts[(c * n_head + h) * part_len(head_size)..][..part_len(head_size)];
            out.fill(0.0);
            out[0] = m;
            for (j, s) in keys.clone().zip(&scores) {
                let e = crate::fast::exp::exp(s - m);
                out[1] += e;
                let v = &value_cache[j * kv_dim + k0..][..head_size];
                for (o, vv) in out[2..].iter_mut().zip(v) {
                    *o += e * vv;
                }
            }
        }
    }
}

/// One dispatch: the query of the pass's one row (a batch's sequence: its
/// row), at layer scale `scale`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub scale: f32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        attention::Shape { scale: self.scale }.params(at)
    }

    /// One workgroup per (chunk, head).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [chunks(p.keys0 as usize) as u32, p.n_embd / p.head_size, 1]
    }

    /// The query (one round), every key of the chunk loaded at once per 64
    /// dims of the head, then its values four keys a round; neighbouring
    /// invocations read neighbouring dims of a key or value row.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (hs, e) = (u64::from(p.head_size), u64::from(p.n_embd));
        let n_keys = u64::from(p.keys0) + 1;
        let groups = u64::from(WG_SPLIT / DIM_LANES);
        let values = hs.div_ceil(u64::from(DIM_LANES)) * rounds(u64::from(CHUNK) / groups, UNROLL);
        let kv = floats(2 * n_keys * e / u64::from(p.group.max(1)));
        Cost::plain(
            invocations(self.workgroups(p, format), WG_SPLIT),
            rounds(hs, u64::from(WG_SPLIT)) + hs.div_ceil(4 * u64::from(KEY_LANES)) + values,
            floats(e),
        )
        .with_kv(kv, true)
    }
}

//! `shaders/rms_qkv.wgsl`: decode's fused RMSNorm → QKV projection → RoPE →
//! K/V write for the Llama family (prefill runs the four as `rms_norm`,
//! `matmul`, `rope`, `kv_write`).

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring, rounds};
use super::layernorm::norm_rounds;
use super::{kv_write, matmul, rms_norm, rope};
use super::{pair_cols, qkv_cols, At, Cost, Heads, Launch, WG};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub slot: u32,
    pub eps: f32,
    /// Query heads per K/V head.
    pub group: u32,
    pub head_size: u32,
    /// This token's position: its row of the turns table.
    pub pos: u32,
    pub _pad: [u32; 2],
}

/// The RMSNorm's output `rms_norm(x) · weight`, the fused kernels' prologue.
pub fn normalised(x: &[f32], weight: &[f32], eps: f32) -> Vec<f32> {
    let mut xn = vec![0.0; x.len()];
    rms_norm::run_cpu(x, weight, eps, &mut xn);
    xn
}

/// qkv = rms_norm(x) @ w + bias, its q and k turned by `turn` (this
/// position's row of [`rope::turns`]); key_cache[slot] = its k,
/// value_cache[slot] = its v.
#[allow(clippy::too_many_arguments)] // the kernel's bindings, in order
pub fn run_cpu(
    x: &[f32],      // (n_embd)
    weight: &[f32], // (n_embd) the norm's
    eps: f32,
    w: &Matrix,   // (n_embd, n_embd + 2 * kv_dim) in its format
    bias: &[f32], // (n_embd + 2 * kv_dim)
    heads: Heads,
    turn: &[(f32, f32)], // (head_size / 2)
    slot: usize,
    qkv: &mut [f32],         // (n_embd + 2 * kv_dim)
    key_cache: &mut [f32],   // (n_positions, kv_dim)
    value_cache: &mut [f32], // (n_positions, kv_dim)
) {
    matmul::run_cpu(&normalised(x, weight, eps), w, bias, qkv);
    rope::run_cpu(qkv, heads, turn);
    kv_write::run_cpu(qkv, heads, slot, key_cache, value_cache);
}

/// One dispatch: decode's first RMSNorm, QKV projection, RoPE and K/V write.
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            n_embd: at.n_embd(),
            slot: at.slot0,
            eps: at.eps(),
            group: at.group(),
            head_size: at.head_size(),
            pos: at.turn0,
            _pad: [0; 2],
        }
    }

    /// Dispatch size: one invocation per `pair_cols` columns of qkv.
    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        [qkv_cols(p.n_embd, p.group).div_ceil(WG * pair_cols(format)), 1, 1]
    }

    /// The RMSNorm's passes, then one round per row of k, then the turn.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, hs) = (u64::from(p.n_embd), u64::from(p.head_size));
        let (n, groups) = (u64::from(qkv_cols(p.n_embd, p.group)), self.workgroups(p, format));
        // x, the norm's weight, the bias, qkv written, this position's turns.
        let io = floats(2 * e + 2 * n + hs);
        rms_fused_cost((e, n, io), groups, WG, rounds(e, 1) + 1, format)
    }
}

/// The cost of a kernel that RMS-normalises a row of `k` (one reduction, then
/// the weight: as `rms_norm`'s), projects it to `n` columns in `dot` rounds
/// and writes them: `io` bytes besides the `(k, n)` weights.
pub fn rms_fused_cost(
    (k, n, io): (u64, u64, u64),
    groups: [u32; 3],
    wg: u32,
    dot: u64,
    format: Format,
) -> Cost {
    let weights = matrix_bytes(format, k, n, Channels::Cols);
    let norm = norm_rounds(k, wg) + rounds(k, u64::from(wg));
    Cost::plain(invocations(groups, wg), norm + dot + 1, io)
        .with_weights(weights, neighbouring(1, format))
}

//! `shaders/ln_qkv.wgsl`: decode's fused LayerNorm → QKV projection → K/V
//! write (prefill runs the three as `layernorm`, `matmul`, `kv_write`).

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring, rounds};
use super::layernorm::{norm_rounds, stats_rounds};
use super::{kv_write, layernorm, matmul};
use super::{qkv_cols, At, Cost, Heads, Launch, WG};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// The widest row the fused LayerNorm holds in workgroup memory (`MAX_EMBD`
/// in ln_stats.wgsl, used by the split kernels; the cpu profile's keep it in
/// x): 8 KB of the 16 KB every adapter has.
pub const LN_MAX_EMBD: usize = 2048;

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
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// The normalised row `layernorm(x) · weight + bias`, the fused kernels' prologue.
pub fn normalised(x: &[f32], ln_weight: &[f32], ln_bias: &[f32], eps: f32) -> Vec<f32> {
    let mut xn = vec![0.0; x.len()];
    layernorm::run_cpu(x, ln_weight, ln_bias, eps, &mut xn);
    xn
}

/// qkv = layernorm(x) @ w + bias; key_cache[slot] = its k, value_cache[slot] = its v.
#[allow(clippy::too_many_arguments)] // the kernel's bindings, in order
pub fn run_cpu(
    x: &[f32],         // (n_embd)
    ln_weight: &[f32], // (n_embd)
    ln_bias: &[f32],   // (n_embd)
    eps: f32,
    w: &Matrix,   // (n_embd, n_embd + 2 * kv_dim) in its format
    bias: &[f32], // (n_embd + 2 * kv_dim)
    heads: Heads,
    slot: usize,
    qkv: &mut [f32],         // (n_embd + 2 * kv_dim)
    key_cache: &mut [f32],   // (n_positions, kv_dim)
    value_cache: &mut [f32], // (n_positions, kv_dim)
) {
    matmul::run_cpu(&normalised(x, ln_weight, ln_bias, eps), w, bias, qkv);
    kv_write::run_cpu(qkv, heads, slot, key_cache, value_cache);
}

/// One dispatch: decode's first LayerNorm, QKV projection and K/V write.
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
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }

    /// Dispatch size: one invocation per `pair_cols` columns of qkv
    /// (a weight word of a row; two f32 columns).
    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        [qkv_cols(p.n_embd, p.group).div_ceil(super::WG * super::pair_cols(format)), 1, 1]
    }

    /// The LayerNorm's staged row, then one round per row of k.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, n) = (u64::from(p.n_embd), u64::from(qkv_cols(p.n_embd, p.group)));
        fused_cost(e, n, self.workgroups(p, format), WG, rounds(e, 1), format)
    }
}

/// The cost of a kernel that normalises a row of `k` (`stats_rounds`, then
/// `norm_rounds`) and projects it to `n` columns in `dot` rounds.
pub fn fused_cost(k: u64, n: u64, groups: [u32; 3], wg: u32, dot: u64, format: Format) -> Cost {
    let weights = matrix_bytes(format, k, n, Channels::Cols);
    Cost::plain(
        invocations(groups, wg),
        stats_rounds(k, wg) + norm_rounds(k, wg) + dot + 1,
        floats(3 * k + n),
    )
    .with_weights(weights, neighbouring(1, format))
}

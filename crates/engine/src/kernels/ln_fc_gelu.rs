//! `shaders/ln_fc_gelu.wgsl`: decode's fused LayerNorm → MLP projection c_fc
//! → GELU (prefill runs the three as `layernorm`, `matmul`, `gelu`).

use bytemuck::{Pod, Zeroable};

use super::ln_qkv::{fused_cost, normalised};
use super::{gelu, matmul};
use super::{At, Cost, Launch, WG};
use crate::storage::format::Format;
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub n: u32,
    pub eps: f32,
    pub _pad: u32,
}

/// fc = gelu_new(layernorm(x) @ w + bias)
pub fn run_cpu(
    x: &[f32],         // (n_embd)
    ln_weight: &[f32], // (n_embd)
    ln_bias: &[f32],   // (n_embd)
    eps: f32,
    w: &Matrix,     // (n_embd, n) in its format
    bias: &[f32],   // (n)
    fc: &mut [f32], // (n)
) {
    matmul::run_cpu(&normalised(x, ln_weight, ln_bias, eps), w, bias, fc);
    gelu::run_cpu(fc);
}

/// One dispatch: decode's second LayerNorm, c_fc to `n` columns and GELU.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n_embd: at.n_embd(), n: self.n, eps: at.eps(), _pad: 0 }
    }

    /// Dispatch size: one invocation per `pair_cols` columns (a
    /// weight word of a row; two f32 columns).
    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        [p.n.div_ceil(super::WG * super::pair_cols(format)), 1, 1]
    }

    /// As ln_qkv's: the LayerNorm's three passes, then one round per row of k.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let e = u64::from(p.n_embd);
        fused_cost(e, u64::from(p.n), self.workgroups(p, format), WG, e, format)
    }
}

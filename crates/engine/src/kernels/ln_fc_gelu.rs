//! `shaders/ln_fc_gelu.wgsl`: decode's fused LayerNorm → MLP projection c_fc
//! → GELU (prefill runs the three as `layernorm`, `matmul`, `gelu`).

use bytemuck::{Pod, Zeroable};

use super::ln_qkv::normalised;
use super::{gelu, matmul};
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

/// Dispatch size: one thread per output column.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(super::WG), 1, 1]
}

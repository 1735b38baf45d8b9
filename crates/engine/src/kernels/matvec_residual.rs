//! `shaders/matvec_residual.wgsl`: decode's fused output projection and
//! residual add (prefill runs the two as `matmul`, `residual_add`).

use bytemuck::{Pod, Zeroable};

use super::{matmul, residual_add};
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub k: u32,
    pub n: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// x += y @ w + bias
pub fn run_cpu(
    y: &[f32],     // (k)
    w: &Matrix,    // (k, n) in its format
    bias: &[f32],  // (n)
    x: &mut [f32], // (n)
) {
    let mut out = vec![0.0; x.len()];
    matmul::run_cpu(y, w, bias, &mut out);
    residual_add::run_cpu(&out, x);
}

/// Dispatch size: one thread per output column.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(super::WG), 1, 1]
}

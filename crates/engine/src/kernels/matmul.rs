//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub _pad: u32,
}

/// Outputs per workgroup along each axis: 8 threads × 4 outputs.
const TILE_PER_GROUP: u32 = 32;

/// out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]   (w in Conv1D `[in, out]` layout)
///
/// Every output sums its k products one by one in order 0..k after its bias
/// (the loops: [`fast::matmul`](crate::fast::matmul)).
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    crate::fast::matmul::run(x, w, bias, out)
}

/// Dispatch size: one workgroup per 32×32 block of outputs.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(TILE_PER_GROUP), p.m.div_ceil(TILE_PER_GROUP), 1]
}

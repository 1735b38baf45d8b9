//! `shaders/matvec.wgsl`: the decode linear layer, one token `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use super::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub k: u32,
    pub n: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// out[n] = sum_k x[k] * w[k, n] + bias[n]
pub fn run_cpu(
    x: &[f32],       // (k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (n)
) {
    super::matmul::run_cpu(x, w, bias, out);
}

/// Dispatch size: one thread per output column.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(super::WG), 1, 1]
}

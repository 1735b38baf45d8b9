//! `shaders/matvec_residual.wgsl`: decode's fused output projection and
//! residual add (prefill runs the two as `matmul`, `residual_add`).

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring};
use super::{matmul, residual_add};
use super::{At, Cost, Launch, WG};
use crate::storage::format::{Channels, Format};
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

/// One dispatch: a `[k] → [n]` projection added into the residual stream.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub k: u32,
    pub n: u32,
}

impl Launch for Shape {
    fn params(&self, _: &At) -> Params {
        Params { k: self.k, n: self.n, _pad0: 0, _pad1: 0 }
    }

    /// Dispatch size: one invocation per weight word of a row (its
    /// `per_word` columns).
    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        [p.n.div_ceil(super::WG * format.per_word() as u32), 1, 1]
    }

    /// One round per row of k (its input and its weight).
    fn cost(&self, p: &Params, format: Format) -> Cost {
        residual_cost(p.k, p.n, invocations(self.workgroups(p, format), WG), u64::from(p.k), format)
    }
}

/// The cost of a `[k] → [n]` projection added into the residual stream in
/// `dot` rounds of loads, then one more (the bias and the stream).
pub fn residual_cost(k: u32, n: u32, invocations: u64, dot: u64, format: Format) -> Cost {
    let (k, n) = (u64::from(k), u64::from(n));
    let weights = matrix_bytes(format, k, n, Channels::Cols);
    Cost::plain(invocations, dot + 1, floats(k + 2 * n))
        .with_weights(weights, neighbouring(1, format))
}

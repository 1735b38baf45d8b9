//! `shaders/matmul_tiled.wgsl`: prefill's linear layer on real GPUs, in
//! 64 × 64 blocks staged through workgroup memory 16 rows of k at a time.

use super::cost::invocations;
use super::matmul;
pub use super::matmul::Params;
use super::{At, Cost, Launch};
use crate::storage::format::Format;

/// Outputs per workgroup along each axis (16 invocations × 4).
const BLOCK: u32 = 64;
/// Rows of k per staged tile.
const DEPTH: u64 = 16;

/// out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]: matmul's twin (each output
/// adds its products in the same order, 0..k).
pub use super::matmul::run_cpu;

/// One dispatch: a `[k] → [n]` linear layer over every row of the pass.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub k: u32,
    pub n: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        matmul::Shape { k: self.k, n: self.n }.params(at)
    }

    /// One workgroup per 64 × 64 block of outputs.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n.div_ceil(BLOCK), p.m.div_ceil(BLOCK), 1]
    }

    /// One round per tile of k (its four elements of x and of w staged
    /// together); neighbouring invocations stage neighbouring columns.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let calls = invocations(self.workgroups(p, format), 256);
        matmul::linear_cost(p, calls, u64::from(p.k).div_ceil(DEPTH) + 1, 1, format)
    }
}

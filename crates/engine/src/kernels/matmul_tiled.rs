//! `shaders/matmul_tiled.wgsl`: prefill's linear layer on real GPUs, in
//! 64 × 64 blocks staged through workgroup memory 16 rows of k at a time.

use super::cost::{floats, invocations, matrix_bytes, neighbouring};
use super::matmul;
pub use super::matmul::Params;
use super::{At, Cost, Launch};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// Outputs per workgroup along each axis (16 invocations × 4).
const BLOCK: u32 = 64;
/// Rows of k per staged tile.
const DEPTH: u64 = 16;

/// out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]: matmul's twin (each output
/// adds its products in the same order, 0..k).
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    matmul::run_cpu(x, w, bias, out)
}

/// One dispatch: a `[k] → [n]` linear layer over every row of the pass.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub k: u32,
    pub n: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { m: at.n_rows, k: self.k, n: self.n, _pad: 0 }
    }

    /// One workgroup per 64 × 64 block of outputs.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n.div_ceil(BLOCK), p.m.div_ceil(BLOCK), 1]
    }

    /// One round per tile of k (its four elements of x and of w staged
    /// together); neighbouring invocations stage neighbouring columns.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (m, k, n) = (u64::from(p.m), u64::from(p.k), u64::from(p.n));
        let weights = matrix_bytes(format, k, n, Channels::Cols);
        Cost {
            invocations: invocations(self.workgroups(p, format), 256),
            chain: k.div_ceil(DEPTH) + 1,
            bytes: floats(m * k + n) + weights,
            weights,
            kv: 0,
            coalesced: neighbouring(1, format),
        }
    }
}

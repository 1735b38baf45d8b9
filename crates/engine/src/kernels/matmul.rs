//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring};
use super::{At, Cost, Launch};
use crate::storage::format::{Channels, Format};
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
/// The reference, as plain loops: every output starts from its bias and
/// adds its k products one by one in order 0..k, each weight as the kernels
/// compute with it (`Matrix::get`). The CPU engine runs the same sums in the
/// same order, faster ([`fast::matmul`](crate::fast::matmul)), and is tested
/// against this bit for bit.
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    let (k, n) = (w.rows, w.cols);
    for (row, x) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
        for (j, o) in row.iter_mut().enumerate() {
            let mut acc = bias[j];
            for (kk, &xk) in x.iter().enumerate() {
                acc += xk * w.get(kk * n + j);
            }
            *o = acc;
        }
    }
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

    /// Dispatch size: one workgroup per 32×32 block of outputs.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n.div_ceil(TILE_PER_GROUP), p.m.div_ceil(TILE_PER_GROUP), 1]
    }

    /// Each row of k one round (four x and four weights); neighbouring
    /// invocations read weights four columns apart (a 4 × 4 block each).
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let calls = invocations(self.workgroups(p, format), 64);
        linear_cost(p, calls, u64::from(p.k) + 1, 4, format)
    }
}

/// A prefill linear layer's cost, whatever its tiling: `calls` invocations,
/// each `chain` rounds long, neighbours reading weights `apart` columns apart;
/// x and the bias once, the whole matrix once.
pub fn linear_cost(p: &Params, calls: u64, chain: u64, apart: u64, format: Format) -> Cost {
    let (m, k, n) = (u64::from(p.m), u64::from(p.k), u64::from(p.n));
    let weights = matrix_bytes(format, k, n, Channels::Cols);
    Cost::plain(calls, chain, floats(m * k + n)).with_weights(weights, neighbouring(apart, format))
}

//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use super::matrix::Matrix;

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

/// Rows of `x` that share one unpacking of a row of `w` (a packed row is
/// unpacked once per block, not once per token of a prefill).
const ROW_BLOCK: usize = 16;

/// out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]   (w in Conv1D `[in, out]` layout)
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    let (k, n) = (w.rows, w.cols);
    let mut buf = Vec::new();
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        for or in ob.chunks_exact_mut(n) {
            or.copy_from_slice(bias);
        }
        // k-outer order streams rows of w, like the shader's loop; every
        // output still sums its k products in order 0..k.
        for kk in 0..k {
            let wr = w.row(kk, &mut buf);
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                let xv = xr[kk];
                for (o, &wv) in or.iter_mut().zip(wr) {
                    *o += xv * wv;
                }
            }
        }
    }
}

/// Dispatch size: one workgroup per 32×32 block of outputs.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(TILE_PER_GROUP), p.m.div_ceil(TILE_PER_GROUP), 1]
}

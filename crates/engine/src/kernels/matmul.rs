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
    let mut bufs: [Vec<f32>; 4] = Default::default();
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        for or in ob.chunks_exact_mut(n) {
            or.copy_from_slice(bias);
        }
        // k-outer order streams rows of w, like the shader's loop, four at a
        // time: each output is loaded and stored once per four products
        // instead of once per product. Every output still sums its k
        // products one by one in order 0..k (the same rounding as one at a time).
        let mut kk = 0;
        while kk + 4 <= k {
            let [b0, b1, b2, b3] = &mut bufs;
            let (w0, w1, w2, w3) =
                (w.row(kk, b0), w.row(kk + 1, b1), w.row(kk + 2, b2), w.row(kk + 3, b3));
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                let xv = &xr[kk..kk + 4];
                let rows = or.iter_mut().zip(w0).zip(w1).zip(w2).zip(w3);
                for ((((o, &a), &b), &c), &d) in rows {
                    *o = *o + xv[0] * a + xv[1] * b + xv[2] * c + xv[3] * d;
                }
            }
            kk += 4;
        }
        for kk in kk..k {
            let wr = w.row(kk, &mut bufs[0]);
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

//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

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
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &[f32],       // (k, n)
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    let (k, n) = (w.len() / bias.len(), bias.len());
    for (xr, or) in x.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
        or.copy_from_slice(bias);
        // k-outer order streams rows of w, like the shader's loop.
        for (kk, &xv) in xr.iter().enumerate() {
            for (o, &wv) in or.iter_mut().zip(&w[kk * n..][..n]) {
                *o += xv * wv;
            }
        }
    }
}

/// Dispatch size: one workgroup per 32×32 block of outputs.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(TILE_PER_GROUP), p.m.div_ceil(TILE_PER_GROUP), 1]
}

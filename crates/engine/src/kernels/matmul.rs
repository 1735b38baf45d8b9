//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use super::matrix::{f16_pair, split, Matrix};

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
///
/// k-outer order streams rows of w, like the shader's loop, four at a time:
/// each output is loaded and stored once per four products instead of once
/// per product. Every output still sums its k products one by one in order
/// 0..k (the same rounding as one at a time), whatever the format's path.
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    match w.f16_words() {
        Some(words) => run_f16(x, words, w.rows, bias, out),
        None => run_rows(x, w, bias, out),
    }
}

/// Any format: each row of w borrowed (f32) or unpacked to f32.
fn run_rows(x: &[f32], w: &Matrix, bias: &[f32], out: &mut [f32]) {
    let (k, n) = (w.rows, w.cols);
    let mut bufs: [Vec<f32>; 4] = Default::default();
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        for or in ob.chunks_exact_mut(n) {
            or.copy_from_slice(bias);
        }
        let mut kk = 0;
        while kk + 4 <= k {
            let [b0, b1, b2, b3] = &mut bufs;
            let rows = [w.row(kk, b0), w.row(kk + 1, b1), w.row(kk + 2, b2), w.row(kk + 3, b3)];
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                add4(or, &xr[kk..kk + 4], rows);
            }
            kk += 4;
        }
        for kk in kk..k {
            let wr = w.row(kk, &mut bufs[0]);
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                add1(or, xr[kk], wr);
            }
        }
    }
}

/// f16 with even n, straight from the words: four rows unpacked at a time
/// into their even and odd columns (`lo`, `hi`), and each output row summed
/// as its even then its odd columns (`acc`), interleaved back at the end.
/// Keeping the halves apart lets every loop vectorise; the sums are the same.
fn run_f16(x: &[f32], words: &[u32], k: usize, bias: &[f32], out: &mut [f32]) {
    let (n, h) = (bias.len(), bias.len() / 2);
    let mut lo = vec![0.0; 4 * h]; // (4, n / 2) even columns of rows kk..kk + 4
    let mut hi = vec![0.0; 4 * h]; // (4, n / 2) odd columns
    let mut acc = vec![0.0; ROW_BLOCK * n]; // (rows, 2, n / 2) outputs, halves apart
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        let acc = &mut acc[..ob.len()];
        for a in acc.chunks_exact_mut(n) {
            split(bias, a);
        }
        let mut kk = 0;
        while kk < k {
            let rows = (k - kk).min(4);
            for (i, ws) in words[kk * h..][..rows * h].chunks_exact(h).enumerate() {
                let (l, r) = (&mut lo[i * h..][..h], &mut hi[i * h..][..h]);
                for ((l, r), &word) in l.iter_mut().zip(r).zip(ws) {
                    (*l, *r) = f16_pair(word);
                }
            }
            for (xr, a) in xb.chunks_exact(k).zip(acc.chunks_exact_mut(n)) {
                let (even, odd) = a.split_at_mut(h);
                let xv = &xr[kk..kk + rows];
                if rows == 4 {
                    add4(even, xv, quarters(&lo));
                    add4(odd, xv, quarters(&hi));
                } else {
                    for (i, &xv) in xv.iter().enumerate() {
                        add1(even, xv, &lo[i * h..][..h]);
                        add1(odd, xv, &hi[i * h..][..h]);
                    }
                }
            }
            kk += rows;
        }
        for (a, or) in acc.chunks_exact(n).zip(ob.chunks_exact_mut(n)) {
            let (even, odd) = a.split_at(h);
            for ((o, &e), &d) in or.chunks_exact_mut(2).zip(even).zip(odd) {
                (o[0], o[1]) = (e, d);
            }
        }
    }
}

/// The four rows of a `(4, len / 4)` buffer.
fn quarters(buf: &[f32]) -> [&[f32]; 4] {
    let q = buf.len() / 4;
    [&buf[..q], &buf[q..2 * q], &buf[2 * q..3 * q], &buf[3 * q..]]
}

/// out += xv[0] * a + xv[1] * b + xv[2] * c + xv[3] * d, added one by one.
#[inline(always)]
fn add4(out: &mut [f32], xv: &[f32], [a, b, c, d]: [&[f32]; 4]) {
    for ((((o, &a), &b), &c), &d) in out.iter_mut().zip(a).zip(b).zip(c).zip(d) {
        *o = *o + xv[0] * a + xv[1] * b + xv[2] * c + xv[3] * d;
    }
}

/// out += xv * w
#[inline(always)]
fn add1(out: &mut [f32], xv: f32, w: &[f32]) {
    for (o, &wv) in out.iter_mut().zip(w) {
        *o += xv * wv;
    }
}

/// Dispatch size: one workgroup per 32×32 block of outputs.
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n.div_ceil(TILE_PER_GROUP), p.m.div_ceil(TILE_PER_GROUP), 1]
}

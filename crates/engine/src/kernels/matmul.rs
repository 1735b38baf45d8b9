//! `shaders/matmul.wgsl`: the prefill linear layer, `x @ w + bias`.

use bytemuck::{Pod, Zeroable};

use std::ops::Range;

use super::matrix::{f16_pair, split, Matrix, SHARD_ALIGN};
use super::parallel;

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
/// 0..k (the same rounding as one at a time), whatever the format's path and
/// however the columns are shared among threads.
pub fn run_cpu(
    x: &[f32],       // (m, k)
    w: &Matrix,      // (k, n) in its format
    bias: &[f32],    // (n)
    out: &mut [f32], // (m, n)
) {
    let (k, n) = (w.rows, w.cols);
    let m = out.len() / n.max(1);
    let parts = parallel::parts(n, m * k * n, SHARD_ALIGN);
    if parts.len() == 1 {
        return run_part(x, w, 0..n, bias, out);
    }
    let outs = parallel::map(parts.clone(), |c| {
        let mut o = vec![0.0; m * c.len()]; // (m, c.len()) this part's columns
        run_part(x, w, c.clone(), &bias[c], &mut o);
        o
    });
    for (c, o) in parts.into_iter().zip(outs) {
        for (or, pr) in out.chunks_exact_mut(n).zip(o.chunks_exact(c.len())) {
            or[c.clone()].copy_from_slice(pr);
        }
    }
}

/// Columns `c` of the product (`bias` and `out` hold only those).
fn run_part(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    match w.f16_words() {
        Some(words) => run_f16(x, words, w.cols, c, bias, out),
        None => run_rows(x, w, c, bias, out),
    }
}

/// Any format: each row of w borrowed (f32) or unpacked to f32.
fn run_rows(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, n) = (w.rows, c.len());
    let mut bufs: [Vec<f32>; 4] = Default::default();
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        for or in ob.chunks_exact_mut(n) {
            or.copy_from_slice(bias);
        }
        let mut kk = 0;
        while kk + 4 <= k {
            let [b0, b1, b2, b3] = &mut bufs;
            let row = |r: usize, b| w.row_part(r, c.clone(), b);
            let rows = [row(kk, b0), row(kk + 1, b1), row(kk + 2, b2), row(kk + 3, b3)];
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                add4(or, &xr[kk..kk + 4], rows);
            }
            kk += 4;
        }
        for kk in kk..k {
            let wr = w.row_part(kk, c.clone(), &mut bufs[0]);
            for (xr, or) in xb.chunks_exact(k).zip(ob.chunks_exact_mut(n)) {
                add1(or, xr[kk], wr);
            }
        }
    }
}

/// f16 with even n (`words`: `(k, n / 2)`), columns `c` (even bounds), straight
/// from the words: four rows unpacked at a time into their even and odd
/// columns (`lo`, `hi`), and each output row summed as its even then its odd
/// columns (`acc`), interleaved back at the end. Keeping the halves apart
/// lets every loop vectorise; the sums are the same.
fn run_f16(x: &[f32], words: &[u32], n: usize, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, cols, h) = (x.len() / (out.len() / c.len()), c.len(), c.len() / 2);
    let row_words = |r: usize| &words[(r * n + c.start) / 2..][..h];
    let mut lo = vec![0.0; 4 * h]; // (4, cols / 2) even columns of rows kk..kk + 4
    let mut hi = vec![0.0; 4 * h]; // (4, cols / 2) odd columns
    let mut acc = vec![0.0; ROW_BLOCK * cols]; // (rows, 2, cols / 2) outputs, halves apart
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * cols)) {
        let acc = &mut acc[..ob.len()];
        for a in acc.chunks_exact_mut(cols) {
            split(bias, a);
        }
        let mut kk = 0;
        while kk < k {
            let rows = (k - kk).min(4);
            for i in 0..rows {
                let (l, r) = (&mut lo[i * h..][..h], &mut hi[i * h..][..h]);
                for ((l, r), &word) in l.iter_mut().zip(r).zip(row_words(kk + i)) {
                    (*l, *r) = f16_pair(word);
                }
            }
            for (xr, a) in xb.chunks_exact(k).zip(acc.chunks_exact_mut(cols)) {
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
        for (a, or) in acc.chunks_exact(cols).zip(ob.chunks_exact_mut(cols)) {
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

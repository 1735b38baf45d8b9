//! The CPU engine's loops for [`kernels::matmul`](crate::kernels::matmul)'s
//! twin: k-outer streaming of `w`'s rows, f16 read straight from its words,
//! column panels, threads, AVX2 and the coworker. Every output sums its k
//! products one by one in order 0..k, whatever the path.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use super::f16c;
use super::{coworker, matmul_panels, matmul_panels_f32, matmul_quant, parallel};
use crate::storage::f16_bits::{f16_pair_as, raw_inputs};
use crate::storage::format::{Format, SHARD_ALIGN};
use crate::storage::matrix::{split, Matrix};
use crate::storage::pair::{Bf16, F16};

/// Rows of `x` that share one unpacking of a row of `w` (a packed row is
/// unpacked once per block, not once per token of a prefill).
const ROW_BLOCK: usize = 16;

/// [`kernels::matmul::run_cpu`](crate::kernels::matmul::run_cpu)'s sums, in
/// its shapes: x (m, k), w (k, n) in its format, bias (n), out (m, n).
///
/// k-outer order streams rows of w, like the shader's loop, four at a time:
/// each output is loaded and stored once per four products instead of once
/// per product. Every output still sums its k products one by one in order
/// 0..k (the same rounding as one at a time), whatever the format's path and
/// however the columns are shared among threads.
pub fn run(x: &[f32], w: &Matrix, bias: &[f32], out: &mut [f32]) {
    let n = w.cols;
    let m = out.len() / n.max(1);
    let theirs_here = |s: usize| {
        let mut part = vec![0.0; m * (n - s)]; // (m, n - s)
        run_part(x, w, s..n, &bias[s..], &mut part);
        part
    };
    if let Some((split, mine, theirs)) = coworker::split_product(w, x, m, theirs_here) {
        let rows = mine.chunks_exact(split).zip(theirs.chunks_exact(n - split));
        for (or, (a, b)) in out.chunks_exact_mut(n).zip(rows) {
            or[..split].copy_from_slice(a);
            or[split..].copy_from_slice(b);
        }
        return;
    }
    run_columns(x, w, 0..n, bias, out);
}

/// Columns `c` of the product (`bias` and `out`, `(m, c.len())`, hold only
/// those), shared among threads: [`run`] unshared, and the coworker's
/// engine thread's part straight from the matrix it splits.
pub(crate) fn run_columns(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, n) = (w.rows, c.len());
    let m = out.len() / n.max(1);
    // Parts on shard boundaries counted from 0 (`c` starts on one).
    let parts = parallel::parts(n, m * k * n, SHARD_ALIGN);
    if parts.len() == 1 {
        return run_part(x, w, c, bias, out);
    }
    let outs = parallel::map(parts.clone(), |p| {
        let mut o = vec![0.0; m * p.len()]; // (m, p.len()) this part's columns
        run_part(x, w, c.start + p.start..c.start + p.end, &bias[p], &mut o);
        o
    });
    for (p, o) in parts.into_iter().zip(outs) {
        for (or, pr) in out.chunks_exact_mut(n).zip(o.chunks_exact(p.len())) {
            or[p.clone()].copy_from_slice(pr);
        }
    }
}

/// Columns `c` of the product (`bias` and `out` hold only those).
fn run_part(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    if w.int8_quads().is_some() {
        return super::int8_dot::matmul(x, w, c, bias, out);
    }
    if w.int4_octs().is_some() {
        return super::int8_dot::matmul_int4(x, w, c, bias, out);
    }
    // This copy compiled for AVX-512 for a prefill and an f16 decode step
    // of a row-major matrix (int4's groups; matrices outside the CPU
    // layout), as measured before the column panels (one core, 124M: f16
    // decode step 60 → 51 ms, f32 prefill 328 → 300). For matrices in
    // column panels, where the core runs 512-bit operations whole
    // (`parallel::wide_panels`). int4 and int8 decode steps have their own
    // AVX-512 intrinsics (fast::quant_avx512), through matmul_quant.
    #[cfg(target_arch = "x86_64")]
    let prefill = out.len() > c.len();
    #[cfg(target_arch = "x86_64")]
    let wide = match in_panels(w) {
        true => parallel::wide_panels(),
        false => prefill || w.format == crate::storage::format::Format::F16,
    };
    #[cfg(target_arch = "x86_64")]
    if parallel::avx512() && wide {
        // SAFETY: the CPU has AVX-512 F and BW (just checked).
        return unsafe { run_part_avx512(x, w, c, bias, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { run_part_avx2(x, w, c, bias, out) };
    }
    run_part_here(x, w, c, bias, out)
}

/// Whether `w` is in column panels (f32, f16, bf16 or int8: the CPU layout).
#[cfg(target_arch = "x86_64")]
fn in_panels(w: &Matrix) -> bool {
    let floats = w.f32_panels().is_some() || w.f16_panels().is_some();
    floats || w.bf16_panels().is_some() || w.int8_panels().is_some()
}

/// [`run_part_here`] compiled for AVX-512: the same loops, sixteen lanes wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn run_part_avx512(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    run_part_here(x, w, c, bias, out)
}

/// [`run_part_here`] compiled for AVX2: the same loops, eight lanes wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_part_avx2(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    run_part_here(x, w, c, bias, out)
}

#[inline(always)]
fn run_part_here(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    if let Some(values) = w.f32_panels() {
        return matmul_panels_f32::run(x, values, w.rows, c, bias, out);
    }
    if let Some(words) = w.f16_panels() {
        let (scale, k) = (w.f16_scale(), w.rows);
        // A decode step of a lifted matrix: F16C's conversion where AVX2's
        // copy runs (the same bits).
        #[cfg(target_arch = "x86_64")]
        if x.len() == k && w.is_lifted() && parallel::f16c() {
            if let Some(scaled) = f16c::inputs(x) {
                let stream = crate::storage::panels::columns(words, k, c.clone());
                // SAFETY: the CPU has AVX2 and F16C (just checked).
                unsafe { f16c::panels(&scaled, stream, bias, out) };
                return;
            }
        }
        // x scaled for raw weights where every scaled input is finite: (m, k)
        return match raw_inputs(x, scale) {
            Some(scaled) => {
                matmul_panels::run(&scaled, words, F16::<true> { scale }, k, c, bias, out)
            }
            None => matmul_panels::run(x, words, F16::<false> { scale }, k, c, bias, out),
        };
    }
    if let Some(words) = w.bf16_panels() {
        return matmul_panels::run(x, words, Bf16, w.rows, c, bias, out);
    }
    if w.int8_panels().is_some() {
        return matmul_quant::int8_panels(x, w, c, bias, out);
    }
    if x.len() == w.rows && matmul_quant::run(x, w, c.clone(), bias, out) {
        return;
    }
    // An int4 prefill (a decode step took `matmul_quant::run` above); its
    // words are row-major here (8-bit activations' layouts went to int8_dot).
    if w.format == Format::Int4 && matmul_quant::whole_groups(w, &c) {
        return matmul_quant::int4_prefill(x, w, c, bias, out);
    }
    let Some(words) = w.f16_words() else {
        return run_rows(x, w, c, bias, out);
    };
    let scale = w.f16_scale();
    match raw_inputs(x, scale) {
        Some(scaled) => run_f16::<true>(&scaled, words, scale, w.cols, c, bias, out), // (m, k) scaled
        None => run_f16::<false>(x, words, scale, w.cols, c, bias, out),
    }
}

/// Any format: each row of w borrowed (f32) or unpacked to f32.
#[inline(always)]
fn run_rows(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, n) = (w.rows, c.len());
    let mut bufs: [Vec<f32>; 4] = Default::default();
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * n)) {
        for or in ob.chunks_exact_mut(n) {
            or.copy_from_slice(bias);
        }
        for kk in (0..k).step_by(4) {
            let [b0, b1, b2, b3] = &mut bufs;
            let row = |r: usize, b| (r < k).then(|| w.row_part(r, c.clone(), b));
            let rows = [row(kk, b0), row(kk + 1, b1), row(kk + 2, b2), row(kk + 3, b3)];
            let n_rows = (k - kk).min(4);
            accumulate(xb, k, kk, &rows.map(|r| r.unwrap_or_default())[..n_rows], ob);
        }
    }
}

/// f16 with even n (`words`: `(k, n / 2)`), columns `c` (even bounds), straight
/// from the words, the outputs of each block summed with even and odd columns
/// apart (`acc`), then interleaved back. Keeping the halves apart lets every
/// loop vectorise (interleaving per element does not); the sums are the same.
/// `RAW`: the weights read raw and x already scaled by `scale` ([`raw_inputs`],
/// where every scaled input is finite): the same products, one multiply fewer
/// per weight; else widened (times `scale`).
#[inline(always)]
fn run_f16<const RAW: bool>(
    x: &[f32],
    words: &[u32],
    scale: f32,
    n: usize,
    c: Range<usize>,
    bias: &[f32],
    out: &mut [f32],
) {
    let (k, cols, h) = (x.len() / (out.len() / c.len()), c.len(), c.len() / 2);
    let row_words = |r: usize| &words[(r * n + c.start) / 2..][..h];
    let rows = (x.len() / k.max(1)).min(ROW_BLOCK);
    // (4, 2, cols / 2) rows kk..kk + 4, halves apart; a decode step uses it
    // only for a last part of fewer than four rows
    let mut buf = vec![0.0; if rows > 1 || !k.is_multiple_of(4) { 4 * cols } else { 0 }];
    let mut acc = vec![0.0; rows * cols]; // (rows, 2, cols / 2) outputs, halves apart
    for (xb, ob) in x.chunks(ROW_BLOCK * k).zip(out.chunks_mut(ROW_BLOCK * cols)) {
        let acc = &mut acc[..ob.len()];
        for a in acc.chunks_exact_mut(cols) {
            split(bias, a);
        }
        let mut kk = 0;
        while kk < k {
            let n_rows = (k - kk).min(4);
            if xb.len() == k && k - kk >= 8 {
                // One row of x (a decode step): each weight is used once, so
                // it is widened and multiplied in one pass, never stored, and
                // eight rows go through each output at once.
                let rows = std::array::from_fn(|i| row_words(kk + i));
                add_f16::<RAW, 8>(acc, xb[kk..][..8].try_into().expect("8"), rows, scale);
                kk += 8;
                continue;
            }
            if xb.len() == k && n_rows == 4 {
                let rows = std::array::from_fn(|i| row_words(kk + i));
                add_f16::<RAW, 4>(acc, xb[kk..][..4].try_into().expect("4"), rows, scale);
                kk += 4;
                continue;
            }
            for (i, row) in buf.chunks_exact_mut(cols).take(n_rows).enumerate() {
                let (even, odd) = row.split_at_mut(h);
                for ((e, d), &word) in even.iter_mut().zip(odd).zip(row_words(kk + i)) {
                    (*e, *d) = f16_pair_as::<RAW>(word, scale);
                }
            }
            let rows: [&[f32]; 4] = std::array::from_fn(|i| &buf[i * cols..][..cols]);
            accumulate(xb, k, kk, &rows[..n_rows], acc);
            kk += 4;
        }
        for (a, or) in acc.chunks_exact(cols).zip(ob.chunks_exact_mut(cols)) {
            let (even, odd) = a.split_at(h);
            for ((o, &e), &d) in or.chunks_exact_mut(2).zip(even).zip(odd) {
                (o[0], o[1]) = (e, d);
            }
        }
    }
}

/// [`add4`] on the even and odd halves of an output row (`acc`: `(2, h)`)
/// straight from `N` rows of words (`(h)` each): the same sums in the same
/// order (`N` = 8 adds the products of two passes of four one by one, as
/// they do), each weight widened in a register.
#[inline(always)]
fn add_f16<const RAW: bool, const N: usize>(
    acc: &mut [f32],
    xv: [f32; N],
    rows: [&[u32]; N],
    scale: f32,
) {
    let h = acc.len() / 2;
    let (even, odd) = acc.split_at_mut(h);
    let rows = rows.map(|r| &r[..h]);
    for j in 0..h {
        let (mut e, mut o) = (even[j], odd[j]);
        for (row, &x) in rows.iter().zip(&xv) {
            let (lo, hi) = f16_pair_as::<RAW>(row[j], scale);
            e += x * lo;
            o += x * hi;
        }
        (even[j], odd[j]) = (e, o);
    }
}

/// acc[r, :] += x[r, kk + i] · rows[i] for i in order, for each row r of a
/// block (x: `(rows, k)`, acc: `(rows, width)`): four weight rows go through
/// each output at once, so an output is loaded and stored once per four
/// products. (Two output rows per pass, sharing the weight loads, compiled
/// to slower code: more live vectors than SIMD128 or SSE has registers.)
#[inline(always)]
fn accumulate(xb: &[f32], k: usize, kk: usize, rows: &[&[f32]], acc: &mut [f32]) {
    let width = acc.len() / (xb.len() / k);
    for (xr, ar) in xb.chunks_exact(k).zip(acc.chunks_exact_mut(width)) {
        match *rows {
            [a, b, c, d] => add4(ar, xr[kk..][..4].try_into().expect("4"), [a, b, c, d]),
            _ => {
                for (i, row) in rows.iter().enumerate() {
                    add1(ar, xr[kk + i], row);
                }
            }
        }
    }
}

/// out += xv[0] * a + xv[1] * b + xv[2] * c + xv[3] * d, added one by one.
#[inline(always)]
fn add4(out: &mut [f32], xv: [f32; 4], [a, b, c, d]: [&[f32]; 4]) {
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

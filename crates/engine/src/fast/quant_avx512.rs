//! int4 and int8 decode steps in AVX-512, sixteen columns a register.
//!
//! int4: a weight is looked up, not computed. A
//! group's scale `s` has only sixteen weights it can give, `field · s` for
//! the fields −8..7, so each group first makes that table of sixteen f32s
//! (one multiply, the twin's own: [`Format::load`](crate::storage::format::Format::load))
//! and each nibble then picks its weight from the table in one instruction
//! (`vpermps` reads the low four bits of each lane's index). Per 32 weights
//! that is 12 instructions where widening each field (shift, shift, convert,
//! scale) took 28 in AVX2. The products and sums are the plain loops', in
//! their order, so the bits are the twin's (`cpu_paths.rs`).
//!
//! int8: sixteen bytes widened and converted in two instructions, times
//! their columns' scales, eight rows of the matrix through each register of
//! outputs (the compiler's own sixteen-lane copy of the portable loop
//! measured no faster than its eight-lane one).

use std::arch::x86_64::*;
use std::ops::Range;

use crate::storage::format::{Format, GROUP};
use crate::storage::matrix::Matrix;

/// A group's four words as two vectors of sixteen indices: lane t of half h
/// holds field t of the group's half h (its word `2h + t / 8` shifted right
/// by `4 · (t mod 8)`; only the low four bits count).
#[inline]
#[target_feature(enable = "avx512f")]
fn fields(words: &[u32]) -> (__m512i, __m512i) {
    assert!(words.len() >= GROUP / 8);
    // SAFETY: four words are there (just checked), read unaligned.
    let v = _mm512_castsi128_si512(unsafe { _mm_loadu_si128(words.as_ptr().cast()) });
    let shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
    let low = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    let high = _mm512_add_epi32(low, _mm512_set1_epi32(2));
    let half = |idx: __m512i| _mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, v), shifts);
    (half(low), half(high))
}

/// The sixteen weights a group with scale `s` can hold, indexed by field
/// bits: entry u is `(u as a signed nibble) · s`.
#[inline]
#[target_feature(enable = "avx512f")]
fn table(s: f32) -> __m512 {
    let signed = _mm512_setr_ps(
        0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0,
    );
    _mm512_mul_ps(signed, _mm512_set1_ps(s))
}

/// Sixteen f32s from `v` (at least sixteen long).
#[inline]
#[target_feature(enable = "avx512f")]
fn load(v: &[f32]) -> __m512 {
    assert!(v.len() >= 16);
    // SAFETY: sixteen floats are there, read unaligned.
    unsafe { _mm512_loadu_ps(v.as_ptr()) }
}

/// `matmul_quant`'s int4 decode step: out[j] = bias[j] + Σ_k x[k] · w[k, j]
/// for columns `c` (whole groups), each output adding its k products one
/// by one in order 0..k, as the twin. Eight rows of w go through each
/// group's 32 outputs while they sit in two registers.
#[target_feature(enable = "avx512f")]
pub fn int4_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let row = |r: usize| w.int4_part(r, c.clone());
    out.copy_from_slice(bias);
    let mut kk = 0;
    while kk + 8 <= x.len() {
        add_int4::<8>(out, std::array::from_fn(|i| (x[kk + i], row(kk + i))));
        kk += 8;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_int4::<1>(out, [(xk, row(kk))]);
    }
}

/// A row's part of an int4 matrix: its words and its groups' scales.
type Row<'a> = (&'a [u32], &'a [f32]);

/// out[j] += x_i · w_i[j] for each (x_i, w_i) in order.
#[inline]
#[target_feature(enable = "avx512f")]
fn add_int4<const N: usize>(out: &mut [f32], rows: [(f32, Row); N]) {
    for (g, o) in out.chunks_exact_mut(GROUP).enumerate() {
        let (mut lo, mut hi) = (load(o), load(&o[16..]));
        for &(xk, (ws, ss)) in &rows {
            let (t, (f0, f1)) = (table(ss[g]), fields(&ws[g * GROUP / 8..]));
            let xv = _mm512_set1_ps(xk);
            lo = _mm512_add_ps(lo, _mm512_mul_ps(xv, _mm512_permutexvar_ps(f0, t)));
            hi = _mm512_add_ps(hi, _mm512_mul_ps(xv, _mm512_permutexvar_ps(f1, t)));
        }
        // SAFETY: 32 floats are there (a group), written unaligned.
        unsafe {
            _mm512_storeu_ps(o.as_mut_ptr(), lo);
            _mm512_storeu_ps(o[16..].as_mut_ptr(), hi);
        }
    }
}

/// Whether [`head`] takes this head: int4, whole groups a row. (An int8
/// head runs faster in AVX2's loops, `quant_avx2::head`: a 50257 × 768
/// head on one core of a Zen 4-class EPYC, 6.5 ms here against 3.7.)
pub fn takes_head(head: &Matrix) -> bool {
    head.format == Format::Int4 && head.cols.is_multiple_of(GROUP)
}

/// `lm_head`'s dot products for one row of x and an int4 head
/// ([`takes_head`]): out[v] is x · row `vr.start + v` of the head, each as
/// the twin's sixteen lanes (lane j adds the products k ≡ j (mod 16), in
/// order of k) put together by `combine`; a group's weights looked up in
/// its table.
#[target_feature(enable = "avx512f")]
pub fn head(
    x: &[f32], // (n_embd)
    head: &Matrix,
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32], // (vr.len())
) {
    let (n_embd, words, scales) = (head.cols, head.words(), head.scales());
    let at = |v: usize, g: usize| v * n_embd + g * GROUP; // the group's first weight
    dot_rows(x, vr, combine, out, |v, g| {
        let (t, (lo, hi)) = (table(scales[at(v, g) / GROUP]), fields(&words[at(v, g) / 8..]));
        (_mm512_permutexvar_ps(lo, t), _mm512_permutexvar_ps(hi, t))
    })
}

/// out[v] = x · row `vr.start + v`, whose group g's 32 weights are
/// `group(row, g)` (two registers). Four rows at a time, so that four
/// chains of adds are in flight, not one.
#[inline]
#[target_feature(enable = "avx512f")]
fn dot_rows(
    x: &[f32],
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32],
    group: impl Fn(usize, usize) -> (__m512, __m512),
) {
    let lanes = |acc: __m512| {
        let mut l = [0.0f32; 16];
        // SAFETY: sixteen floats, written unaligned.
        unsafe { _mm512_storeu_ps(l.as_mut_ptr(), acc) };
        combine(l)
    };
    let mut v = vr.start;
    for o in out.chunks_mut(4) {
        let rows: [usize; 4] = std::array::from_fn(|i| (v + i).min(vr.end - 1));
        let mut acc = [_mm512_setzero_ps(); 4];
        for (g, xg) in x.chunks_exact(GROUP).enumerate() {
            let (x0, x1) = (load(xg), load(&xg[16..]));
            for (a, &r) in acc.iter_mut().zip(&rows) {
                let (w0, w1) = group(r, g);
                *a = _mm512_add_ps(*a, _mm512_mul_ps(x0, w0));
                *a = _mm512_add_ps(*a, _mm512_mul_ps(x1, w1));
            }
        }
        for (o, a) in o.iter_mut().zip(acc) {
            *o = lanes(a);
        }
        v += 4;
    }
}

/// `matmul_quant`'s int8 decode step (a scale per column, or `per_tensor`'s
/// one): out[j] = bias[j] + Σ_k x[k] · (q[k, j] · scale[j]) for columns `c`
/// (a multiple of sixteen), in order of k, as the twin.
#[target_feature(enable = "avx512f")]
pub fn int8_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (n, cols) = (w.cols, c.len());
    let q: &[i8] = bytemuck::cast_slice(w.words()); // (k, n) the fields
    let row = |r: usize| &q[r * n + c.start..][..cols];
    out.copy_from_slice(bias);
    let mut kk = 0;
    while kk + 8 <= x.len() {
        add_int8::<8>(out, w, c.start, std::array::from_fn(|i| (x[kk + i], row(kk + i))));
        kk += 8;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_int8::<1>(out, w, c.start, [(xk, row(kk))]);
    }
}

/// out[j] += x_i · (q_i[j] · scale[j]) for each (x_i, q_i) in order; the
/// scales are `w`'s from column `c0` (or its one per-tensor scale).
#[inline]
#[target_feature(enable = "avx512f")]
fn add_int8<const N: usize>(out: &mut [f32], w: &Matrix, c0: usize, rows: [(f32, &[i8]); N]) {
    let per_tensor = w.format == Format::Int8PerTensor;
    for (j, o) in out.chunks_exact_mut(16).enumerate() {
        let scale = match per_tensor {
            true => _mm512_set1_ps(w.scales()[0]),
            false => load(&w.scales()[c0 + 16 * j..]),
        };
        let mut acc = load(o);
        for &(xk, q) in &rows {
            let q = &q[16 * j..][..16];
            // SAFETY: sixteen bytes are there, read unaligned.
            let q = _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(q.as_ptr().cast()) });
            let weight = _mm512_mul_ps(_mm512_cvtepi32_ps(q), scale);
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(xk), weight));
        }
        // SAFETY: sixteen floats are there (`load` checked), written unaligned.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr(), acc) }
    }
}

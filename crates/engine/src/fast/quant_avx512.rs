//! int4 and int8 decode steps in AVX-512, sixteen columns a register.
//!
//! int4: a weight is looked up, not computed. A
//! group's scale `s` has only sixteen weights it can give, `field · s` for
//! the fields −8..7, so each group first makes that table of sixteen f32s
//! (one multiply, the twin's own: [`Format::load`](crate::storage::format::Format::load))
//! and each nibble then picks its weight from the table in one instruction
//! (`vpermps` reads the low four bits of each lane's index). Per 32 weights
//! that is 12 instructions where widening each field (shift, shift, convert,
//! scale) took 28 in AVX2. The decode step goes further: a row's x times the
//! table gives the sixteen products its fields can ask for, so a nibble picks
//! its product, not its weight (one multiply per group in place of one per
//! sixteen weights), and a group's bytes widen straight to indices with its
//! outputs kept even columns first (one widening and one shift in place of
//! two permutes and two shifts). One core of a Zen 4-class EPYC, the int4
//! matmuls of a 124M decode step: 9.1–9.7 → 6.9–8.4 ms. The products and sums
//! are the plain loops', in their order, so the bits are the twin's
//! (`cpu_paths.rs`).
//!
//! int8: sixteen bytes widened and converted in two instructions, times
//! their columns' scales, eight rows of the matrix through each register of
//! outputs (the compiler's own sixteen-lane copy of the portable loop
//! measured no faster than its eight-lane one); in column panels (the CPU
//! layout, on Intel cores: `parallel::wide_panels`), four panels at once.

use std::arch::x86_64::*;
use std::ops::Range;

use super::int4_rows;
use super::touch::{ahead, prefetch, touch};
use crate::storage::format::{Format, GROUP};
use crate::storage::matrix::Matrix;
use crate::storage::panels::PANEL;

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
pub(super) fn load(v: &[f32]) -> __m512 {
    assert!(v.len() >= 16);
    // SAFETY: sixteen floats are there, read unaligned.
    unsafe { _mm512_loadu_ps(v.as_ptr()) }
}

/// `v` into the first sixteen floats of `o`.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn store(o: &mut [f32], v: __m512) {
    // SAFETY: sixteen floats are there (the slice is checked), written unaligned.
    unsafe { _mm512_storeu_ps(o[..16].as_mut_ptr(), v) }
}

/// A group's four words as its fields in two vectors of sixteen indices:
/// even fields, then odd (lane b: byte b of the group, whose low nibble is
/// field 2b and high nibble field 2b + 1; only the low four bits count).
/// One widening and one shift, where [`fields`]' order takes two
/// permutes and two shifts: the decode step keeps its outputs in this
/// order ([`to_even_odd`]) so that it needs no other. `words` points at
/// the group's first word; the caller promises its four are there.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn fields_even_odd(words: *const u32) -> (__m512i, __m512i) {
    // SAFETY: four words are there (the caller's promise), read unaligned.
    let even = _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(words.cast()) });
    (even, _mm512_srli_epi32::<4>(even))
}

/// A group's 32 values reordered even columns first, then odd (in place),
/// or back again (`back`).
#[inline]
#[target_feature(enable = "avx512f")]
fn to_even_odd(group: &mut [f32], back: bool) {
    let (a, b) = (load(group), load(&group[16..]));
    let (lo, hi) = match back {
        // Lane b of the even half is column 2b, of the odd half 2b + 1.
        false => (
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
            _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31),
        ),
        // Back: column t is lane t / 2 of the even half (index t / 2) or,
        // odd t, of the odd half (index 16 + t / 2).
        true => (
            _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
            _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31),
        ),
    };
    // SAFETY: 32 floats are there (`load` checked), written unaligned.
    unsafe {
        _mm512_storeu_ps(group.as_mut_ptr(), _mm512_permutex2var_ps(a, lo, b));
        _mm512_storeu_ps(group[16..].as_mut_ptr(), _mm512_permutex2var_ps(a, hi, b));
    }
}

/// `matmul_quant`'s int4 decode step: out[j] = bias[j] + Σ_k x[k] · w[k, j]
/// for columns `c` (whole groups), each output adding its k products one
/// by one in order 0..k, as the twin. Eight rows of w go through each
/// group's 32 outputs while they sit in two registers, which hold the
/// group's even and odd columns ([`fields_even_odd`]) until the end.
#[target_feature(enable = "avx512f")]
pub fn int4_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    if x.is_empty() {
        out.copy_from_slice(bias);
        return;
    }
    let parts = int4_rows::Parts::new(w, x.len(), c); // every row's columns c
    assert_eq!(out.len(), parts.groups() * GROUP);
    out.copy_from_slice(bias);
    out.chunks_exact_mut(GROUP).for_each(|o| to_even_odd(o, false));
    let mut kk = 0;
    while kk + 8 <= x.len() {
        let xs = std::array::from_fn(|i| x[kk + i]);
        // SAFETY: rows kk..kk + 8 are the matrix's (< x.len()), each with
        // out's groups (asserted); the next eight are only fetched early.
        unsafe { add_int4::<8>(out, xs, parts.at(kk), parts.at(kk + 8)) };
        kk += 8;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        // SAFETY: as above, row kk < x.len(); nothing fetched early.
        unsafe { add_int4::<1>(out, [xk], parts.at(kk), [(std::ptr::null(), std::ptr::null())]) };
    }
    out.chunks_exact_mut(GROUP).for_each(|o| to_even_odd(o, true));
}

/// out[j] += x_i · w_i[j] for each x_i and row i's words and scales
/// (`rows`, [`int4_rows::Parts::at`]) in order, each group of `out` even
/// columns first; `next`: the next step's rows, fetched early a cache line
/// (four groups) at a time as these rows are read. Rows are read through
/// their pointers, checked once for the whole matrix (per row, one core of
/// a Zen 4-class EPYC, 124M int4 decode, five rounds A B: medians 9.57 →
/// 9.16 ms/token; then once, not per row, on the Intel Xeon: see the README).
///
/// # Safety
/// Each of `rows` holds `out.len() / GROUP` groups' words and scales.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn add_int4<const N: usize>(
    out: &mut [f32],
    xs: [f32; N],
    rows: [(*const u32, *const f32); N],
    next: [(*const u32, *const f32); N],
) {
    const WORDS: usize = GROUP / 8;
    for (g, o) in out.chunks_exact_mut(GROUP).enumerate() {
        if g % 4 == 0 {
            for (words, _) in next {
                prefetch(words.wrapping_add(WORDS * g));
            }
        }
        let (mut even, mut odd) = (load(o), load(&o[16..]));
        for i in 0..N {
            // SAFETY: g < groups, and each row has that many groups' words
            // and scales (the caller's promise).
            let (s, (f0, f1)) =
                unsafe { (*rows[i].1.add(g), fields_even_odd(rows[i].0.add(g * WORDS))) };
            // x_i times each weight the group can hold: the sixteen products
            // its fields can ask for, each the twin's x · w.
            let products = _mm512_mul_ps(_mm512_set1_ps(xs[i]), table(s));
            even = _mm512_add_ps(even, _mm512_permutexvar_ps(f0, products));
            odd = _mm512_add_ps(odd, _mm512_permutexvar_ps(f1, products));
        }
        // SAFETY: 32 floats are there (a group), written unaligned.
        unsafe {
            _mm512_storeu_ps(o.as_mut_ptr(), even);
            _mm512_storeu_ps(o[16..].as_mut_ptr(), odd);
        }
    }
}

/// Whether [`head`] takes this head: int4, whole groups a row. (An int8
/// head runs faster in AVX2's loops, `quant_avx2::head`: a 50257 × 768
/// head on one core of a Zen 4-class EPYC, 6.5 ms here against 3.7.)
pub fn takes_head(head: &Matrix) -> bool {
    // Row-major (row panels: `lm_head_rows`).
    head.format == Format::Int4 && head.cols.is_multiple_of(GROUP) && !head.cpu_only()
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

/// `matmul_quant::int8_panels`'s decode step (`q`: the parts' panels,
/// `(cols / PANEL, k, PANEL)` bytes; `s`, `b`, `out`: `(cols)`): `out[j] =
/// b[j] + Σ_r x[r] · (q[r, j] · s[j])`, in order of r, as the twin. One
/// panel's two registers of sums each wait for their last addition (its
/// latency, a row at a time), so four panels go at once, eight sums in
/// flight. One core of a Xeon with AMX, 124M, int8 decode step (AVX2's one
/// panel at a time before): 21.7 → 13.2 ms two panels at once, 10.5 four.
#[target_feature(enable = "avx512f")]
pub fn int8_panels(x: &[f32], q: &[i8], s: &[f32], b: &[f32], out: &mut [f32]) {
    const FOUR: usize = 4 * PANEL;
    let k = x.len();
    let whole = out.len() / FOUR * FOUR; // columns in fours of panels
    let fours = q.chunks_exact(FOUR * k).zip(s.chunks_exact(FOUR)).zip(b.chunks_exact(FOUR));
    for ((q, s), b) in
        fours.zip(out.chunks_exact_mut(FOUR)).map(|(((q, s), b), o)| ((q, s), (b, o)))
    {
        panels::<4>(x, q, s, b.0, b.1);
    }
    let ones = q[whole * k..].chunks_exact(PANEL * k).zip(s[whole..].chunks_exact(PANEL));
    let ones = ones.zip(b[whole..].chunks_exact(PANEL)).zip(out[whole..].chunks_exact_mut(PANEL));
    for (((q, s), b), o) in ones {
        panels::<1>(x, q, s, b, o);
    }
}

/// [`int8_panels`] for `N` panels (`q`: `(N, k, PANEL)` bytes; `s`, `b`,
/// `o`: `(N · PANEL)`), each output's products in order of r.
#[inline]
#[target_feature(enable = "avx512f")]
fn panels<const N: usize>(x: &[f32], q: &[i8], s: &[f32], b: &[f32], o: &mut [f32]) {
    let k = x.len();
    let q = &q[..N * k * PANEL];
    let s: [[__m512; 2]; N] = std::array::from_fn(|p| [0, 16].map(|h| load(&s[PANEL * p + h..])));
    let mut acc: [[__m512; 2]; N] =
        std::array::from_fn(|p| [0, 16].map(|h| load(&b[PANEL * p + h..])));
    for (r, &xr) in x.iter().enumerate() {
        let xv = _mm512_set1_ps(xr);
        for (p, (acc, s)) in acc.iter_mut().zip(&s).enumerate() {
            if r % 2 == 0 {
                touch(q, (p * k + r) * PANEL + ahead::<i8>()); // a line: two rows
            }
            let row = &q[(p * k + r) * PANEL..][..PANEL];
            for (h, (a, s)) in acc.iter_mut().zip(s).enumerate() {
                // SAFETY: sixteen bytes are there (the slice is checked), read unaligned.
                let q = unsafe { _mm_loadu_si128(row[16 * h..].as_ptr().cast()) };
                let weight = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), *s);
                *a = _mm512_add_ps(*a, _mm512_mul_ps(xv, weight));
            }
        }
    }
    for (p, acc) in acc.into_iter().enumerate() {
        for (h, a) in acc.into_iter().enumerate() {
            store(&mut o[PANEL * p + 16 * h..], a);
        }
    }
}

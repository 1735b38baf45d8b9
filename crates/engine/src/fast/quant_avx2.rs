//! int4 and int8 decode steps in AVX2, eight columns a register: the CPUs
//! without AVX-512 (`quant_avx512` has the sixteen-lane ones) and the int8
//! LM head on every x86-64 CPU, where the compiler's AVX2 copy of the
//! portable loops measured slower than f16.
//!
//! int4: a word's eight fields are one register's eight lanes, the word
//! broadcast and shifted lane by lane (`vpsllvd`) so that field t sits at
//! the top of lane t, then shifted down with its sign: two instructions,
//! no multiply. int8: eight bytes widened with their sign in one. Then the
//! twin's arithmetic: the field converted, times its scale
//! ([`Format::load`](crate::storage::format::Format::load)), times x, added
//! in order of k, so the bits are the twin's (`cpu_paths.rs`). Eight rows of
//! the matrix go through each register of outputs.

use std::arch::x86_64::*;
use std::ops::Range;

use super::int4_rows::{self, Row};
use super::touch::prefetch;
use crate::storage::format::{Channels, Format, GROUP};
use crate::storage::matrix::Matrix;

/// Eight f32s from `v` (at least eight long).
#[inline]
#[target_feature(enable = "avx2")]
fn load(v: &[f32]) -> __m256 {
    assert!(v.len() >= 8);
    // SAFETY: eight floats are there, read unaligned.
    unsafe { _mm256_loadu_ps(v.as_ptr()) }
}

/// `v` into `o[..8]`.
#[inline]
#[target_feature(enable = "avx2")]
fn store(o: &mut [f32], v: __m256) {
    assert!(o.len() >= 8);
    // SAFETY: eight floats are there, written unaligned.
    unsafe { _mm256_storeu_ps(o.as_mut_ptr(), v) }
}

/// The eight fields of `word` as signed integers, lane t field t.
#[inline]
#[target_feature(enable = "avx2")]
fn fields(word: u32) -> __m256i {
    let tops = _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
    _mm256_srai_epi32::<28>(_mm256_sllv_epi32(_mm256_set1_epi32(word as i32), tops))
}

/// The weights of a word's eight fields in a group of scale `s`.
#[inline]
#[target_feature(enable = "avx2")]
fn int4_weights(word: u32, s: __m256) -> __m256 {
    _mm256_mul_ps(_mm256_cvtepi32_ps(fields(word)), s)
}

/// The weights of eight int8 fields (`q[..8]`) with scales `s`.
#[inline]
#[target_feature(enable = "avx2")]
fn int8_weights(q: &[i8], s: __m256) -> __m256 {
    assert!(q.len() >= 8);
    // SAFETY: eight bytes are there (just checked), read unaligned.
    let q = _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(q.as_ptr().cast()) });
    _mm256_mul_ps(_mm256_cvtepi32_ps(q), s)
}

/// `matmul_quant`'s int4 decode step: out[j] = bias[j] + Σ_k x[k] · w[k, j]
/// for columns `c` (whole groups), each output adding its k products one
/// by one in order 0..k, as the twin. Eight rows of w go through each
/// group's 32 outputs while they sit in four registers.
#[target_feature(enable = "avx2")]
pub fn int4_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    if x.is_empty() {
        out.copy_from_slice(bias);
        return;
    }
    let parts = int4_rows::Parts::new(w, x.len(), c); // every row's columns c
    assert_eq!(out.len(), parts.groups() * GROUP);
    out.copy_from_slice(bias);
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
}

/// out[j] += x_i · w_i[j] for each x_i and row i's words and scales
/// (`rows`, [`int4_rows::Parts::at`]) in order; `next`: the next step's
/// rows, fetched early. Rows are read through their pointers: with a
/// bounds check on each row's four words and its scale, a group's eight
/// rows were a loop the compiler kept rolled, 43 instructions a row where
/// 30 do the work (one core of an AVX2-only EPYC, 124M shape, int4 decode,
/// five rounds A B: 19.3–22.4 → 17.4–18.9 ms/token, medians 21.4 → 18.4).
///
/// # Safety
/// Each of `rows` holds `out.len() / GROUP` groups' words and scales.
#[inline]
#[target_feature(enable = "avx2")]
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
                prefetch(words.wrapping_add(WORDS * g)); // a group is sixteen bytes
            }
        }
        let mut acc: [__m256; WORDS] = std::array::from_fn(|h| load(&o[8 * h..]));
        for i in 0..N {
            // SAFETY: g < groups, and each row has that many groups' words
            // and scales (the caller's promise).
            let (ws, s) = unsafe { (rows[i].0.add(g * WORDS), *rows[i].1.add(g)) };
            let (xv, s) = (_mm256_set1_ps(xs[i]), _mm256_set1_ps(s));
            for (h, a) in acc.iter_mut().enumerate() {
                // SAFETY: as above, h < WORDS.
                let word = unsafe { *ws.add(h) };
                *a = _mm256_add_ps(*a, _mm256_mul_ps(xv, int4_weights(word, s)));
            }
        }
        for (h, a) in acc.into_iter().enumerate() {
            store(&mut o[8 * h..], a);
        }
    }
}

/// `matmul_quant`'s int8 decode step (a scale per column, or `per_tensor`'s
/// one): out[j] = bias[j] + Σ_k x[k] · (q[k, j] · scale[j]) for columns `c`
/// (a multiple of eight), in order of k, as the twin.
#[target_feature(enable = "avx2")]
pub fn int8_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (n, cols) = (w.cols, c.len());
    let q: &[i8] = bytemuck::cast_slice(w.words()); // (k, n) the fields
    let row = |r: usize| &q[r * n + c.start..][..cols];
    out.copy_from_slice(bias);
    let mut kk = 0;
    while kk + 8 <= x.len() {
        let next = std::array::from_fn(|i| row((kk + 8 + i).min(x.len() - 1)).as_ptr());
        add_int8::<8>(out, w, c.start, std::array::from_fn(|i| (x[kk + i], row(kk + i))), next);
        kk += 8;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_int8::<1>(out, w, c.start, [(xk, row(kk))], [row(kk).as_ptr()]);
    }
}

/// out[j] += x_i · (q_i[j] · scale[j]) for each (x_i, q_i) in order; the
/// scales are `w`'s from column `c0` (or its one per-tensor scale).
#[inline]
#[target_feature(enable = "avx2")]
fn add_int8<const N: usize>(
    out: &mut [f32],
    w: &Matrix,
    c0: usize,
    rows: [(f32, &[i8]); N],
    next: [*const i8; N],
) {
    let per_tensor = w.format == Format::Int8PerTensor;
    for (j, o) in out.chunks_exact_mut(8).enumerate() {
        if j % 8 == 0 {
            for p in next {
                prefetch(p.wrapping_add(8 * j));
            }
        }
        let scale = match per_tensor {
            true => _mm256_set1_ps(w.scales()[0]),
            false => load(&w.scales()[c0 + 8 * j..]),
        };
        let mut acc = load(o);
        for &(xk, q) in &rows {
            let weight = int8_weights(&q[8 * j..], scale);
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(xk), weight));
        }
        store(o, acc);
    }
}

/// Whether [`head`] takes this head: int4 or int8, whole groups a row (the
/// int8 head on AVX-512 CPUs too, where it measured faster than
/// `quant_avx512`'s), or f32 in rows, whole sixteens a row.
pub fn takes_head(head: &Matrix) -> bool {
    let quant = matches!(head.format, Format::Int4 | Format::Int8 | Format::Int8PerTensor)
        && !head.cpu_only(); // row-major (row panels: `lm_head_rows`)
    let f32_rows = head.as_f32().is_some() && head.cols.is_multiple_of(16);
    (quant && head.cols.is_multiple_of(GROUP)) || f32_rows
}

/// `lm_head`'s dot products for one row of x and an int4, int8 or f32 head
/// ([`takes_head`]): out[v] is x · row `vr.start + v` of the head, each as
/// the twin's sixteen lanes (lane j adds the products k ≡ j (mod 16), in
/// order of k: two registers) put together by `combine`. f32 too: the plain
/// loop read one row at a time, one chain of adds per lane and one stream
/// from memory (one core of a Xeon with AMX, 124M f32 decode step: the head
/// ran at about half the matmuls' bytes a second).
#[target_feature(enable = "avx2")]
pub fn head(
    x: &[f32], // (n_embd)
    head: &Matrix,
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32], // (vr.len())
) {
    let (n_embd, scales) = (head.cols, head.scales());
    let q: &[i8] = bytemuck::cast_slice(head.words()); // int8: (n_vocab, n_embd) the fields
    let (v0, n) = (vr.start, vr.len());
    let wrap = |v: usize| v0 + (v - v0) % n; // a row of the head for any v (the prefetch's)
    let bytes = |v: usize| &q[wrap(v) * n_embd..][..n_embd];
    let start = |r: &[i8]| r.as_ptr();
    if let Some(values) = head.as_f32() {
        let row = |v: usize| &values[wrap(v) * n_embd..][..n_embd];
        let start = |r: &[f32]| r.as_ptr().cast();
        return dot_rows(x, vr, combine, out, (row, start, 64), |r: &[f32], p| {
            [load(&r[16 * p..]), load(&r[16 * p + 8..])]
        });
    }
    match (head.format, head.channels) {
        (Format::Int4, _) => {
            let row = |v: usize| head.int4_part(wrap(v), 0..n_embd);
            let start = |(w, _): Row| w.as_ptr().cast();
            dot_rows(x, vr, combine, out, (row, start, 8), |(w, s): Row, p| {
                let s = _mm256_set1_ps(s[p / 2]);
                [int4_weights(w[2 * p], s), int4_weights(w[2 * p + 1], s)]
            })
        }
        (Format::Int8, Channels::Cols) => {
            dot_rows(x, vr, combine, out, (bytes, start, 16), |r: &[i8], p| {
                let s = &scales[16 * p..];
                [int8_weights(&r[16 * p..], load(s)), int8_weights(&r[16 * p + 8..], load(&s[8..]))]
            })
        }
        (format, channels) => {
            let row_scale = format == Format::Int8 && channels == Channels::Rows;
            let scaled = |v: usize| (bytes(v), scales[if row_scale { wrap(v) } else { 0 }]);
            let start = |(r, _): (&[i8], f32)| r.as_ptr();
            dot_rows(x, vr, combine, out, (scaled, start, 16), |(r, s), p| {
                let s = _mm256_set1_ps(s);
                [int8_weights(&r[16 * p..], s), int8_weights(&r[16 * p + 8..], s)]
            })
        }
    }
}

/// out[v] = x · row `vr.start + v`, whose sixteen weights p are
/// `sixteen(rows.0(row), p)` (two registers). Four rows at a time, so that
/// four chains of adds are in flight, not one, while the next four rows are
/// prefetched: `rows` is (a row's state, where its weights start, their
/// bytes per sixteen).
#[inline]
#[target_feature(enable = "avx2")]
fn dot_rows<R: Copy>(
    x: &[f32],
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32],
    rows: (impl Fn(usize) -> R, impl Fn(R) -> *const i8, usize),
    sixteen: impl Fn(R, usize) -> [__m256; 2],
) {
    let (row, start, stride) = rows;
    let mut v = vr.start;
    for o in out.chunks_mut(4) {
        let these: [R; 4] = std::array::from_fn(|i| row((v + i).min(vr.end - 1)));
        let next: [*const i8; 4] = std::array::from_fn(|i| start(row(v + 4 + i)));
        let mut acc = [[_mm256_setzero_ps(); 2]; 4];
        for (p, xp) in x.chunks_exact(16).enumerate() {
            if (stride * p).is_multiple_of(64) {
                for n in next {
                    prefetch(n.wrapping_add(stride * p));
                }
            }
            let (x0, x1) = (load(xp), load(&xp[8..]));
            for (a, &r) in acc.iter_mut().zip(&these) {
                let [w0, w1] = sixteen(r, p);
                a[0] = _mm256_add_ps(a[0], _mm256_mul_ps(x0, w0));
                a[1] = _mm256_add_ps(a[1], _mm256_mul_ps(x1, w1));
            }
        }
        for (o, [a0, a1]) in o.iter_mut().zip(acc) {
            let mut lanes = [0.0f32; 16];
            store(&mut lanes, a0);
            store(&mut lanes[8..], a1);
            *o = combine(lanes);
        }
        v += 4;
    }
}

/// `matmul_quant::int8_panels`'s loop for one panel (32 columns) and one row
/// of x: o[j] = b[j] + Σ_r x[r] · (panel[r, j] · s[j]), in order of r, the
/// 32 outputs in four registers for all of k.
#[target_feature(enable = "avx2")]
pub fn int8_panel(x: &[f32], panel: &[i8], s: &[f32], b: &[f32], o: &mut [f32]) {
    let s: [__m256; 4] = std::array::from_fn(|h| load(&s[8 * h..]));
    let mut acc: [__m256; 4] = std::array::from_fn(|h| load(&b[8 * h..]));
    for (&xr, row) in x.iter().zip(panel.chunks_exact(32)) {
        let xv = _mm256_set1_ps(xr);
        for (h, a) in acc.iter_mut().enumerate() {
            *a = _mm256_add_ps(*a, _mm256_mul_ps(xv, int8_weights(&row[8 * h..], s[h])));
        }
    }
    for (h, a) in acc.into_iter().enumerate() {
        store(&mut o[8 * h..], a);
    }
}

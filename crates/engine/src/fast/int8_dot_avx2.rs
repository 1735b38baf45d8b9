//! [`int8_dot`](super::int8_dot)'s sums in AVX2: 32 products of 8-bit
//! inputs and int8 weights in five instructions (`vpmaddubsw` multiplies an
//! unsigned byte by a signed one, so each weight's sign moves to its input
//! first; pairs of products fit sixteen bits, 2 · 128 · 127 < 2¹⁵, and
//! `vpmaddwd` adds pairs of those). The integer sums are exact, and each
//! block's float step is the definition's, so the bits are its.

use std::arch::x86_64::*;
use std::ops::Range;

use super::int8_dot::BLOCK;
use crate::storage::matrix::Matrix;
use crate::storage::panels::PANEL;
use crate::storage::quads::QUAD;

/// `acc` plus, in each 32-bit lane, Σ over its four byte pairs of
/// `x[i] · w[i]` (x, w signed, x never −128).
#[inline]
#[target_feature(enable = "avx2")]
fn dot4(acc: __m256i, x: __m256i, w: __m256i) -> __m256i {
    let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
}

/// 32 bytes from `v` at `at` (`v` at least that long).
#[inline]
#[target_feature(enable = "avx2")]
fn load_bytes<T: bytemuck::Pod>(v: &[T], at: usize) -> __m256i {
    let bytes: &[u8] = bytemuck::cast_slice(&v[at..]);
    // SAFETY: 32 bytes are there (the slice is checked), read unaligned.
    unsafe { _mm256_loadu_si256(bytes[..32].as_ptr().cast()) }
}

/// Eight f32s from `v` (at least eight long).
#[inline]
#[target_feature(enable = "avx2")]
fn load(v: &[f32]) -> __m256 {
    // SAFETY: eight floats are there (the slice is checked), read unaligned.
    unsafe { _mm256_loadu_ps(v[..8].as_ptr()) }
}

/// One panel's outputs for one quantised row (`qx`, `d`; `panel`: `(⌈k /
/// 4⌉, PANEL)` words of quads): `o[j] = b[j] + acc(j) · s[j]`. A quad's 32
/// columns are four registers of integer sums against its four inputs
/// broadcast; each block's sums join the float sums when the block ends.
#[target_feature(enable = "avx2")]
pub fn panel(qx: &[i8], d: &[f32], panel: &[u32], s: &[f32], b: &[f32], o: &mut [f32]) {
    const QUADS: usize = BLOCK / QUAD; // quads a block
    let mut acc = [_mm256_setzero_ps(); PANEL / 8];
    let n_quads = qx.len() / QUAD;
    for (blk, &db) in d.iter().enumerate() {
        let mut isum = [_mm256_setzero_si256(); PANEL / 8];
        for r4 in blk * QUADS..n_quads.min((blk + 1) * QUADS) {
            let (words, x4) = (&panel[r4 * PANEL..][..PANEL], &qx[r4 * QUAD..][..QUAD]);
            let x4 = _mm256_set1_epi32(i32::from_le_bytes(std::array::from_fn(|t| x4[t] as u8)));
            for (h, sum) in isum.iter_mut().enumerate() {
                *sum = dot4(*sum, x4, load_bytes(words, 8 * h));
            }
        }
        let dv = _mm256_set1_ps(db);
        for (a, sum) in acc.iter_mut().zip(isum) {
            *a = _mm256_add_ps(*a, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(sum)));
        }
    }
    for (h, a) in acc.into_iter().enumerate() {
        let v = _mm256_add_ps(load(&b[8 * h..]), _mm256_mul_ps(a, load(&s[8 * h..])));
        // SAFETY: eight floats are there (the slice is checked), written unaligned.
        unsafe { _mm256_storeu_ps(o[8 * h..][..8].as_mut_ptr(), v) };
    }
}

/// The head's logits for rows `vr` from one quantised row (`qx`, `d`;
/// n_embd a multiple of [`BLOCK`]): out[v] = acc(v) · s[v]. Four rows at a
/// time; each block's 32 products a row are one register, and the four
/// rows' registers are summed lane-wise together (three horizontal adds).
#[target_feature(enable = "avx2")]
pub fn head(qx: &[i8], d: &[f32], head: &Matrix, vr: Range<usize>, s: &[f32], out: &mut [f32]) {
    let n_embd = head.cols;
    let q: &[i8] = bytemuck::cast_slice(head.words()); // (n_vocab, n_embd) the fields
    let xs: Vec<__m256i> = (0..n_embd / BLOCK).map(|b| load_bytes(qx, BLOCK * b)).collect();
    let last = vr.end - 1;
    let mut v = vr.start;
    for (o, s) in out.chunks_mut(4).zip(s.chunks(4)) {
        let rows: [&[i8]; 4] = std::array::from_fn(|i| &q[(v + i).min(last) * n_embd..][..n_embd]);
        let mut acc = _mm_setzero_ps(); // the four rows' Σ_b d_b · isum_b
        for (b, (&x, &db)) in xs.iter().zip(d).enumerate() {
            for r in &rows {
                // The rows four ahead, while these are read.
                _mm_prefetch::<_MM_HINT_T0>(r.as_ptr().wrapping_add(4 * n_embd + BLOCK * b));
            }
            let sums = rows.map(|r| dot4(_mm256_setzero_si256(), x, load_bytes(r, BLOCK * b)));
            let [s0, s1, s2, s3] = sums;
            let s = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
            let isum = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
            acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(db), _mm_cvtepi32_ps(isum)));
        }
        let mut sums = [0.0f32; 4];
        // SAFETY: four floats, written unaligned.
        unsafe { _mm_storeu_ps(sums.as_mut_ptr(), acc) };
        for ((o, sum), s) in o.iter_mut().zip(sums).zip(s) {
            *o = sum * s;
        }
        v += 4;
    }
}

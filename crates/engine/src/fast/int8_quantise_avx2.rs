//! [`quantise_block`](super::int8_quantise::quantise_block) of a row of x
//! (`s`: None), or of `y = x · s` (a row of x in one int4 panel's scales),
//! in AVX2: the same products, the same maximum, the same scale, and
//! `vcvtps2dq`'s rounding, ties to even; a last short block, one holding a
//! NaN and one whose scale is not [`simd_exact`] through `quantise_block`
//! itself (so no lane needs NaN's zeroing). (The portable rounding is a
//! libm call a value: a quarter of a prefill's matmul time before this.)
//!
//! Blocks go [`GROUP`] at a time: their maxima meet in one register, and
//! one division each gives the eight scales and their inverses. Block by
//! block, the maximum's last three steps across lanes and the two scalar
//! divisions were most of the work: an int4 prefill quantises each row of
//! x once a panel, and this was half of its time.

use std::arch::x86_64::*;

use super::int8_quantise::{quantise_one, quantise_tail, simd_exact, BLOCK};

/// Blocks whose scales are found together: one register of maxima.
const GROUP: usize = 8;

/// x (or `x · s`) quantised into `q` (`(⌈k / 8⌉ · 8)`) and `d`
/// (`(⌈k / BLOCK⌉)`) block by block, as `quantise_block` does.
#[target_feature(enable = "avx2")]
pub fn quantise(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    let whole = x.len() / BLOCK;
    let y = Y { x: &x[..whole * BLOCK], s: s.map(|s| &s[..whole * BLOCK]) };
    let (qw, dw) = (&mut q[..whole * BLOCK], &mut d[..whole]); // the whole blocks'
                                                               // SAFETY: the CPU has AVX2, and every block of `y` is in `x` and `s`
                                                               // (checked just above).
    unsafe {
        match s {
            Some(_) => blocks::<true>(&y, qw, dw),
            None => blocks::<false>(&y, qw, dw),
        }
    }
    quantise_tail(x, s, whole, q, d);
}

/// A row's whole blocks: x, and its scales where `y = x · s`.
struct Y<'a> {
    x: &'a [f32],
    s: Option<&'a [f32]>,
}

/// Every block of `y` ([`GROUP`]s, then the rest one by one): `S`, whether
/// it has scales.
///
/// # Safety
/// The CPU has AVX2; `y.x` (and `y.s`, for `S`) holds `d.len()` blocks.
#[target_feature(enable = "avx2")]
unsafe fn blocks<const S: bool>(y: &Y, q: &mut [i8], d: &mut [f32]) {
    let groups = d.len() / GROUP;
    for g in (0..groups).map(|g| g * GROUP) {
        // SAFETY: as the caller's.
        if unsafe { !group::<S>(y, g, q, &mut d[g..g + GROUP]) } {
            for (b, d) in d.iter_mut().enumerate().skip(g).take(GROUP) {
                // SAFETY: as the caller's.
                *d = unsafe { one::<S>(y, b, q) };
            }
        }
    }
    for (b, d) in d.iter_mut().enumerate().skip(groups * GROUP) {
        // SAFETY: as the caller's.
        *d = unsafe { one::<S>(y, b, q) };
    }
}

/// Block `b` of y: its 32 values.
///
/// # Safety
/// As [`blocks`]', and `b` one of its blocks.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn block<const S: bool>(y: &Y, b: usize) -> [__m256; 4] {
    let at = BLOCK * b;
    let (x, s) = (y.x.as_ptr(), y.s.unwrap_or(y.x).as_ptr());
    // SAFETY: 32 floats from `at` are in `x` (and `s`), read unaligned.
    let load = |h: usize| unsafe {
        let v = _mm256_loadu_ps(x.add(at + 8 * h));
        if S {
            _mm256_mul_ps(v, _mm256_loadu_ps(s.add(at + 8 * h)))
        } else {
            v
        }
    };
    [load(0), load(1), load(2), load(3)]
}

/// |v|'s bits, whose order as unsigned integers is the values' own, with
/// NaN above infinity: a block's maximum in each of eight lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn lane_maxima(y: &[__m256; 4]) -> __m256i {
    let abs = _mm256_set1_epi32(0x7fff_ffff);
    let [a, b, c, d] = y.map(|v| _mm256_and_si256(_mm256_castps_si256(v), abs));
    _mm256_max_epu32(_mm256_max_epu32(a, b), _mm256_max_epu32(c, d))
}

/// Block `b` alone: its values into `q`, its scale returned.
///
/// # Safety
/// As [`block`]'s.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn one<const S: bool>(y: &Y, b: usize, q: &mut [i8]) -> f32 {
    // SAFETY: as the caller's.
    let v = unsafe { block::<S>(y, b) };
    let m = lane_maxima(&v);
    let h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m));
    let h = _mm_max_epu32(h, _mm_shuffle_epi32::<0b01_00_11_10>(h));
    let bits = _mm_cvtsi128_si32(_mm_max_epu32(h, _mm_shuffle_epi32::<0b10_11_00_01>(h)));
    let scale = f32::from_bits(bits as u32) / 127.0;
    // A NaN in the block, or a scale past `simd_exact` (an infinite one
    // too): the definition's way. Else no product below is NaN.
    if bits as u32 > f32::INFINITY.to_bits() || !simd_exact(scale) {
        return quantise_one(y.x, y.s, b, q);
    }
    let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
    store(&v, inverse, &mut q[BLOCK * b..]);
    scale
}

/// Blocks `g..g + GROUP` into `q` and their scales into `d`, or false
/// (nothing written) where one of them is not [`simd_exact`]'s (a NaN
/// maximum too: its scale is NaN). The blocks are read twice (from L1).
///
/// # Safety
/// As [`block`]'s, for each of the group's blocks.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn group<const S: bool>(y: &Y, g: usize, q: &mut [i8], d: &mut [f32]) -> bool {
    // SAFETY: as the caller's.
    let m: [__m256i; GROUP] =
        std::array::from_fn(|i| lane_maxima(&unsafe { block::<S>(y, g + i) }));
    let scale = _mm256_div_ps(_mm256_castsi256_ps(across(m)), _mm256_set1_ps(127.0));
    // simd_exact: 0, or an exponent field neither 0 (subnormal) nor 255
    // (infinite, NaN); the scales are never negative.
    let bits = _mm256_castps_si256(scale);
    let exponent = _mm256_srli_epi32::<23>(bits);
    let normal = _mm256_and_si256(
        _mm256_cmpgt_epi32(exponent, _mm256_setzero_si256()),
        _mm256_cmpgt_epi32(_mm256_set1_epi32(255), exponent),
    );
    let exact = _mm256_or_si256(normal, _mm256_cmpeq_epi32(bits, _mm256_setzero_si256()));
    if _mm256_movemask_epi8(exact) != -1 {
        return false;
    }
    // 1 / scale, and 0 for a scale of 0 (whose 1 / 0 is infinite).
    let positive = _mm256_cmp_ps::<_CMP_GT_OQ>(scale, _mm256_setzero_ps());
    let inverse = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0), scale), positive);
    let mut inverses = [0.0f32; GROUP];
    // SAFETY: eight floats each, written unaligned.
    unsafe {
        _mm256_storeu_ps(d[..GROUP].as_mut_ptr(), scale);
        _mm256_storeu_ps(inverses.as_mut_ptr(), inverse);
    }
    for (i, inverse) in inverses.into_iter().enumerate() {
        // SAFETY: as the caller's.
        let v = unsafe { block::<S>(y, g + i) };
        store(&v, inverse, &mut q[BLOCK * (g + i)..]);
    }
    true
}

/// Each of eight registers' maximum over its lanes, register i's in lane i:
/// pairs of registers interleaved and maxed, then pairs of those, then the
/// two halves.
#[inline]
#[target_feature(enable = "avx2")]
fn across(m: [__m256i; GROUP]) -> __m256i {
    let pair = |a, b| _mm256_max_epu32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    let quad = |a, b| _mm256_max_epu32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
    let low = quad(pair(m[0], m[1]), pair(m[2], m[3])); // registers 0–3, each half's
    let high = quad(pair(m[4], m[5]), pair(m[6], m[7])); // registers 4–7
    _mm256_max_epu32(
        _mm256_permute2x128_si256::<0x20>(low, high),
        _mm256_permute2x128_si256::<0x31>(low, high),
    )
}

/// A block's values `round(y · inverse)` as bytes into `q` (32 long).
#[inline]
#[target_feature(enable = "avx2")]
fn store(y: &[__m256; 4], inverse: f32, q: &mut [i8]) {
    let inverse = _mm256_set1_ps(inverse);
    let [q0, q1, q2, q3] = y.map(|v| _mm256_cvtps_epi32(_mm256_mul_ps(v, inverse)));
    let bytes = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    let bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    // SAFETY: 32 bytes are there (the slice is checked), written unaligned.
    unsafe { _mm256_storeu_si256(q[..BLOCK].as_mut_ptr().cast(), bytes) };
}

#[cfg(test)]
mod tests {
    use super::super::int8_quantise::{quantise_block, BLOCK};
    use crate::storage::quads::OCT;

    /// A row of `k` values in ±3 with awkward blocks where it has them:
    /// block 1 zeros, block 9 a NaN, block 16 so small that its scale is
    /// subnormal, block 21 an infinity.
    fn row(k: usize, seed: u32) -> Vec<f32> {
        let mut state = seed;
        let mut x: Vec<f32> = (0..k)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1 << 24) as f32 * 6.0 - 3.0
            })
            .collect();
        let mut block = |b: usize, f: &dyn Fn(f32) -> f32| {
            for v in x.iter_mut().skip(b * BLOCK).take(BLOCK) {
                *v = f(*v);
            }
        };
        block(1, &|_| 0.0);
        block(16, &|v| v * 1e-39);
        for (at, v) in [(9 * BLOCK + 3, f32::NAN), (21 * BLOCK + 30, f32::INFINITY)] {
            if at < x.len() {
                x[at] = v;
            }
        }
        x
    }

    /// The quantiser's values and scales are the definition's, block by
    /// block, for rows of whole and short blocks, in groups of eight and
    /// not, with and without scales.
    #[test]
    fn quantise_gives_the_definitions_values_and_scales() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        for k in [1, 63, 65, 255, 256, 257, 300, 768, 1757] {
            let (x, s) = (row(k, 7), row(k, 11));
            for s in [None, Some(&s)] {
                let y: Vec<f32> = match s {
                    Some(s) => x.iter().zip(s).map(|(x, s)| x * s).collect(),
                    None => x.clone(),
                };
                let mut want = (vec![0i8; k.next_multiple_of(OCT)], vec![]);
                for (yb, qb) in y.chunks(BLOCK).zip(want.0.chunks_mut(BLOCK)) {
                    want.1.push(quantise_block(yb, qb));
                }
                let mut got = (vec![0i8; k.next_multiple_of(OCT)], vec![0.0; k.div_ceil(BLOCK)]);
                // SAFETY: the CPU has AVX2 (just checked).
                unsafe { super::quantise(&x, s.map(|s| &s[..]), &mut got.0, &mut got.1) };
                let bits = |d: &[f32]| d.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
                assert_eq!(got.0, want.0, "values, k {k}, scaled {}", s.is_some());
                assert_eq!(bits(&got.1), bits(&want.1), "scales, k {k}, scaled {}", s.is_some());
            }
        }
    }
}

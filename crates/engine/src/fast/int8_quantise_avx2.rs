//! [`quantise_block`](super::int8_quantise::quantise_block) of a row of x
//! (`s`: None), or of `y = x · s` (a row of x in one int4 panel's scales),
//! in AVX2 (or AVX-512's registers, for a prefill): the same products, the
//! same maximum, the same scale, and `vcvtps2dq`'s rounding, ties to even
//! (the values within ±127, so packing them saturates nothing); a last
//! short block, one holding a NaN and one whose scale is not
//! [`simd_exact`] through `quantise_block` itself (so no lane needs NaN's
//! zeroing). (The portable rounding is a libm call a value: a quarter of
//! a prefill's matmul time before this.)
//!
//! Blocks go [`GROUP`] at a time: their maxima meet in one register, and
//! one division each gives the eight scales and their inverses. Block by
//! block, the maximum's last three steps across lanes and the two scalar
//! divisions were most of the work: an int4 prefill quantises each row of
//! x once a panel, and this was half of its time (one core of a Xeon with
//! AMX, 124M, 64-token prefill, int4 weights and int8 activations: 91 →
//! 74–78 ms; AVX-512's registers 74–78 → 70–71, but a decode step 9.1–9.7
//! → 9.7–10.2 ms, so decode keeps AVX2's).

use std::arch::x86_64::*;

use super::int8_quantise::{quantise_one, quantise_tail, simd_exact, BLOCK};

/// Blocks whose scales are found together: one register of maxima.
const GROUP: usize = 8;

/// x (or `x · s`) quantised into `q` (`(⌈k / 8⌉ · 8)`) and `d`
/// (`(⌈k / BLOCK⌉)`) block by block, as `quantise_block` does.
#[target_feature(enable = "avx2")]
pub fn quantise(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    // SAFETY: the CPU has AVX2, all `Avx2`'s steps need.
    unsafe { row::<Avx2>(x, s, q, d) }
}

/// [`quantise`] in AVX-512's registers: a prefill's (the same bits).
#[target_feature(enable = "avx2,avx512f")]
pub fn quantise_wide(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    // SAFETY: the CPU has AVX2 and AVX-512 F, all `Avx512`'s steps need.
    unsafe { row::<Avx512>(x, s, q, d) }
}

/// A row's whole blocks: x, and its scales where `y = x · s`.
struct Y<'a> {
    x: &'a [f32],
    s: Option<&'a [f32]>,
}

/// One block's steps in one width of registers: `L` in what follows.
trait Lanes {
    /// A block of y's 32 values.
    type Block;

    /// Block `b` of y (times `y.s` where `S`).
    ///
    /// # Safety
    /// The CPU has the width's features; the block is in `y.x` (and `y.s`).
    unsafe fn block<const S: bool>(y: &Y, b: usize) -> Self::Block;

    /// |v|'s bits, whose order as unsigned integers is the values' own,
    /// with NaN above infinity: the block's maximum in each of eight lanes.
    ///
    /// # Safety
    /// The CPU has the width's features.
    unsafe fn maxima(v: &Self::Block) -> __m256i;

    /// The block's values `round(y · inverse)` as bytes into `q` (32 long).
    ///
    /// # Safety
    /// The CPU has the width's features.
    unsafe fn store(v: &Self::Block, inverse: f32, q: &mut [i8]);
}

/// Eight lanes a register: four a block.
struct Avx2;

impl Lanes for Avx2 {
    type Block = [__m256; 4];

    #[inline(always)]
    unsafe fn block<const S: bool>(y: &Y, b: usize) -> [__m256; 4] {
        let (x, s) =
            (y.x[BLOCK * b..][..BLOCK].as_ptr(), y.s.map(|s| s[BLOCK * b..][..BLOCK].as_ptr()));
        let mut v = [_mm256_setzero_ps(); 4];
        for (h, v) in v.iter_mut().enumerate() {
            // SAFETY: 32 floats are at `x` (and `s`), read unaligned.
            unsafe {
                *v = _mm256_loadu_ps(x.add(8 * h));
                if let (true, Some(s)) = (S, s) {
                    *v = _mm256_mul_ps(*v, _mm256_loadu_ps(s.add(8 * h)));
                }
            }
        }
        v
    }

    #[inline(always)]
    unsafe fn maxima(v: &[__m256; 4]) -> __m256i {
        // SAFETY: as the caller's.
        unsafe {
            let abs = _mm256_set1_epi32(0x7fff_ffff);
            let a = |v| _mm256_and_si256(_mm256_castps_si256(v), abs);
            _mm256_max_epu32(_mm256_max_epu32(a(v[0]), a(v[1])), _mm256_max_epu32(a(v[2]), a(v[3])))
        }
    }

    #[inline(always)]
    unsafe fn store(v: &[__m256; 4], inverse: f32, q: &mut [i8]) {
        // SAFETY: as the caller's; 32 bytes are in `q` (checked), written unaligned.
        unsafe {
            let inverse = _mm256_set1_ps(inverse);
            let i = |h: usize| _mm256_cvtps_epi32(_mm256_mul_ps(v[h], inverse));
            let words = [_mm256_packs_epi32(i(0), i(1)), _mm256_packs_epi32(i(2), i(3))];
            let bytes = _mm256_packs_epi16(words[0], words[1]);
            let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
            let bytes = _mm256_permutevar8x32_epi32(bytes, order);
            _mm256_storeu_si256(q[..BLOCK].as_mut_ptr().cast(), bytes);
        }
    }
}

/// Sixteen lanes a register: two a block.
struct Avx512;

impl Lanes for Avx512 {
    type Block = [__m512; 2];

    #[inline(always)]
    unsafe fn block<const S: bool>(y: &Y, b: usize) -> [__m512; 2] {
        let (x, s) =
            (y.x[BLOCK * b..][..BLOCK].as_ptr(), y.s.map(|s| s[BLOCK * b..][..BLOCK].as_ptr()));
        let mut v = [_mm512_setzero_ps(); 2];
        for (h, v) in v.iter_mut().enumerate() {
            // SAFETY: 32 floats are at `x` (and `s`), read unaligned.
            unsafe {
                *v = _mm512_loadu_ps(x.add(16 * h));
                if let (true, Some(s)) = (S, s) {
                    *v = _mm512_mul_ps(*v, _mm512_loadu_ps(s.add(16 * h)));
                }
            }
        }
        v
    }

    #[inline(always)]
    unsafe fn maxima(v: &[__m512; 2]) -> __m256i {
        // SAFETY: as the caller's.
        unsafe {
            let abs = _mm512_set1_epi32(0x7fff_ffff);
            let a = |v| _mm512_and_si512(_mm512_castps_si512(v), abs);
            let m = _mm512_max_epu32(a(v[0]), a(v[1]));
            _mm256_max_epu32(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64::<1>(m))
        }
    }

    #[inline(always)]
    unsafe fn store(v: &[__m512; 2], inverse: f32, q: &mut [i8]) {
        let q = &mut q[..BLOCK];
        // SAFETY: as the caller's; 32 bytes are in `q` (checked), written unaligned.
        unsafe {
            let inverse = _mm512_set1_ps(inverse);
            for (h, v) in v.iter().enumerate() {
                let bytes = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(*v, inverse)));
                _mm_storeu_si128(q.as_mut_ptr().add(16 * h).cast(), bytes);
            }
        }
    }
}

/// A row through `L`'s steps: [`GROUP`]s of whole blocks, then the rest
/// of them one by one, then a last short block.
///
/// # Safety
/// The CPU has `L`'s features.
#[inline(always)]
unsafe fn row<L: Lanes>(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    let whole = x.len() / BLOCK;
    let y = Y { x: &x[..whole * BLOCK], s: s.map(|s| &s[..whole * BLOCK]) };
    // The whole blocks' values and scales; whether y has scales is decided
    // once a row, and each block's loads are compiled for it.
    let (qw, dw) = (&mut q[..whole * BLOCK], &mut d[..whole]);
    // SAFETY: as the caller's.
    unsafe {
        match s {
            Some(_) => whole_blocks::<L, true>(&y, qw, dw),
            None => whole_blocks::<L, false>(&y, qw, dw),
        }
    }
    quantise_tail(x, s, whole, q, d);
}

/// Every whole block of `y` into `q` and `d`: [`GROUP`]s, and one by one
/// a group that [`group`] hands back and the blocks past the last group.
///
/// # Safety
/// The CPU has `L`'s features; `S` whether `y` has scales.
#[inline(always)]
unsafe fn whole_blocks<L: Lanes, const S: bool>(y: &Y, q: &mut [i8], d: &mut [f32]) {
    let groups = d.len() / GROUP;
    for g in (0..groups).map(|g| g * GROUP) {
        // SAFETY: as the caller's.
        if unsafe { !group::<L, S>(y, g, q, &mut d[g..g + GROUP]) } {
            for (b, d) in d.iter_mut().enumerate().skip(g).take(GROUP) {
                // SAFETY: as the caller's.
                *d = unsafe { one::<L, S>(y, b, q) };
            }
        }
    }
    for (b, d) in d.iter_mut().enumerate().skip(groups * GROUP) {
        // SAFETY: as the caller's.
        *d = unsafe { one::<L, S>(y, b, q) };
    }
}

/// Block `b` alone: its values into `q`, its scale returned.
///
/// # Safety
/// The CPU has `L`'s features; `S` whether `y` has scales.
#[inline(always)]
unsafe fn one<L: Lanes, const S: bool>(y: &Y, b: usize, q: &mut [i8]) -> f32 {
    // SAFETY: as the caller's (the blocks `y` holds are whole).
    unsafe {
        let v = L::block::<S>(y, b);
        let m = L::maxima(&v);
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
        L::store(&v, inverse, &mut q[BLOCK * b..]);
        scale
    }
}

/// Blocks `g..g + GROUP` into `q` and their scales into `d`, or false
/// (nothing written) where one of them is not [`simd_exact`]'s (a NaN
/// maximum too: its scale is NaN). The blocks are read twice (from L1).
///
/// # Safety
/// The CPU has `L`'s features; `S` whether `y` has scales.
#[inline(always)]
unsafe fn group<L: Lanes, const S: bool>(y: &Y, g: usize, q: &mut [i8], d: &mut [f32]) -> bool {
    // SAFETY: as the caller's (the blocks `y` holds are whole).
    unsafe {
        let mut m = [_mm256_setzero_si256(); GROUP];
        for (i, m) in m.iter_mut().enumerate() {
            *m = L::maxima(&L::block::<S>(y, g + i));
        }
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
        _mm256_storeu_ps(d[..GROUP].as_mut_ptr(), scale);
        _mm256_storeu_ps(inverses.as_mut_ptr(), inverse);
        for (i, inverse) in inverses.into_iter().enumerate() {
            L::store(&L::block::<S>(y, g + i), inverse, &mut q[BLOCK * (g + i)..]);
        }
        true
    }
}

/// Each of eight registers' maximum over its lanes, register i's in lane i:
/// pairs of registers interleaved and maxed, then pairs of those, then the
/// two halves.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn across(m: [__m256i; GROUP]) -> __m256i {
    // SAFETY: as the caller's.
    unsafe {
        let pair =
            |a, b| _mm256_max_epu32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
        let quad =
            |a, b| _mm256_max_epu32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        let low = quad(pair(m[0], m[1]), pair(m[2], m[3])); // registers 0–3, each half's
        let high = quad(pair(m[4], m[5]), pair(m[6], m[7])); // registers 4–7
        _mm256_max_epu32(
            _mm256_permute2x128_si256::<0x20>(low, high),
            _mm256_permute2x128_si256::<0x31>(low, high),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::int8_quantise::{quantise_block, BLOCK};
    use crate::storage::quads::OCT;

    /// One of the quantisers, as `quantise` and `quantise_wide` are typed.
    type Quantiser = unsafe fn(&[f32], Option<&[f32]>, &mut [i8], &mut [f32]);

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
                let wide = std::is_x86_feature_detected!("avx512f");
                for (name, quantise) in
                    [("avx2", super::quantise as Quantiser), ("wide", super::quantise_wide)]
                        .into_iter()
                        .take(if wide { 2 } else { 1 })
                {
                    let mut got =
                        (vec![0i8; k.next_multiple_of(OCT)], vec![0.0; k.div_ceil(BLOCK)]);
                    // SAFETY: the CPU has AVX2 (checked above), and AVX-512 F where `wide` runs.
                    unsafe { quantise(&x, s.map(|s| &s[..]), &mut got.0, &mut got.1) };
                    let bits = |d: &[f32]| d.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
                    let what = format!("{name}, k {k}, scaled {}", s.is_some());
                    assert_eq!(got.0, want.0, "values, {what}");
                    assert_eq!(bits(&got.1), bits(&want.1), "scales, {what}");
                }
            }
        }
    }
}

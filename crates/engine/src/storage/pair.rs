//! How a word holds its two 16-bit weights, element 2i in the low half and
//! 2i + 1 in the high half: f16 (read raw or widened, [`f16_bits`]) or bf16
//! (f32's top 16 bits). The CPU loops that read two weights a word (column
//! panels, the LM head's fused dot) are written once over [`Pair`], so bf16
//! takes f16's one-stream paths with its own two-instruction widening.

#[cfg(target_arch = "wasm32")]
use core::arch::wasm32::v128;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256, __m256i};

use super::f16_bits::f16_pair_as;

/// A word's two weights as the kernels multiply them.
pub trait Pair: Copy {
    /// Elements 2i and 2i + 1 of word i.
    fn pair(self, word: u32) -> (f32, f32);

    /// [`pair`](Self::pair) for eight words at once: (low halves, high halves).
    ///
    /// # Safety
    /// The CPU has AVX2; call it from code compiled for AVX2 (it is inlined there).
    #[cfg(target_arch = "x86_64")]
    unsafe fn pair8(self, words: __m256i) -> (__m256, __m256);

    /// [`pair`](Self::pair) for four words at once: (low halves, high halves).
    #[cfg(target_arch = "wasm32")]
    fn pair4(self, words: v128) -> (v128, v128);
}

/// f16 words: read raw (`RAW`, for inputs scaled by
/// [`raw_inputs`](super::f16_bits::raw_inputs)) or widened, times `scale`
/// (the matrix's [`f16_scale`](super::matrix::Matrix::f16_scale)).
#[derive(Clone, Copy)]
pub struct F16<const RAW: bool> {
    pub scale: f32,
}

/// bf16 words: each half is its f32's top 16 bits, so widening is a shift
/// or a mask (exact, with no scale and no subnormal case of its own).
#[derive(Clone, Copy)]
pub struct Bf16;

impl<const RAW: bool> Pair for F16<RAW> {
    #[inline(always)]
    fn pair(self, word: u32) -> (f32, f32) {
        f16_pair_as::<RAW>(word, self.scale)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair8(self, w: __m256i) -> (__m256, __m256) {
        use std::arch::x86_64::*;
        // SAFETY: AVX2 is there (the caller's contract).
        unsafe {
            let keep = _mm256_set1_epi32(0x8fff_e000_u32 as i32); // f16_pair_raw's
            let lo = _mm256_srai_epi32::<3>(_mm256_slli_epi32::<16>(w));
            let hi = _mm256_srai_epi32::<3>(w);
            let lo = _mm256_castsi256_ps(_mm256_and_si256(lo, keep));
            let hi = _mm256_castsi256_ps(_mm256_and_si256(hi, keep));
            match RAW {
                true => (lo, hi),
                false => {
                    let scale = _mm256_set1_ps(self.scale);
                    (_mm256_mul_ps(lo, scale), _mm256_mul_ps(hi, scale))
                }
            }
        }
    }

    #[cfg(target_arch = "wasm32")]
    #[inline(always)]
    fn pair4(self, w: v128) -> (v128, v128) {
        use core::arch::wasm32::*;
        let keep = u32x4_splat(0x8fff_e000);
        let lo = v128_and(i32x4_shr(i32x4_shl(w, 16), 3), keep);
        let hi = v128_and(i32x4_shr(w, 3), keep);
        match RAW {
            true => (lo, hi),
            false => {
                let scale = f32x4_splat(self.scale);
                (f32x4_mul(lo, scale), f32x4_mul(hi, scale))
            }
        }
    }
}

impl Pair for Bf16 {
    #[inline(always)]
    fn pair(self, word: u32) -> (f32, f32) {
        (f32::from_bits(word << 16), f32::from_bits(word & 0xffff_0000))
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair8(self, w: __m256i) -> (__m256, __m256) {
        use std::arch::x86_64::*;
        // SAFETY: AVX2 is there (the caller's contract).
        unsafe {
            let high = _mm256_set1_epi32(0xffff_0000_u32 as i32);
            let lo = _mm256_castsi256_ps(_mm256_slli_epi32::<16>(w));
            (lo, _mm256_castsi256_ps(_mm256_and_si256(w, high)))
        }
    }

    #[cfg(target_arch = "wasm32")]
    #[inline(always)]
    fn pair4(self, w: v128) -> (v128, v128) {
        use core::arch::wasm32::*;
        (i32x4_shl(w, 16), v128_and(w, u32x4_splat(0xffff_0000)))
    }
}

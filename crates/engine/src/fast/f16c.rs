//! f16 decode steps with F16C's conversion (`vcvtph2ps`: eight f16 values
//! to eight f32 in one instruction), where the portable loops widen each
//! word's two halves with five integer operations per eight words: the
//! blocks' matmuls over column panels and the LM head. The matrix is lifted
//! ([`Matrix::lift_f16`](crate::storage::matrix::Matrix::lift_f16)): each
//! value converts to exactly 2¹⁰ times its weight, so x is taken at 2⁻¹⁰
//! times (exact where no input loses a bit) and every product is the same
//! real number as the twin's, rounded the same way. Each output sums its k
//! products one by one in order after its bias: the same bits.

use std::arch::x86_64::*;

use crate::storage::f16_bits::F16_LIFT;
use crate::storage::panels::{PANEL, ROW};

/// x at 2⁻¹⁰ times for a lifted matrix's converted values, or `None` where
/// an input would lose a bit (then the portable loop runs).
pub fn inputs(x: &[f32]) -> Option<Vec<f32>> {
    let down = 1.0 / (1u32 << F16_LIFT) as f32;
    let scaled: Vec<f32> = x.iter().map(|&v| v * down).collect();
    let exact = scaled.iter().zip(x).all(|(&s, &v)| s * (1u32 << F16_LIFT) as f32 == v);
    exact.then_some(scaled)
}

/// `out = x @ w + bias` for one row of x (`x`: [`inputs`]' scaled row, k
/// long) and panels of a lifted f16 matrix (`stream`: `(out.len() / PANEL,
/// k, ROW)` words); `bias` and `out` hold those panels' columns.
#[target_feature(enable = "avx2,f16c")]
pub fn panels(x: &[f32], stream: &[u32], bias: &[f32], out: &mut [f32]) {
    let k = x.len();
    let panels = stream.chunks_exact(k * ROW).zip(bias.chunks_exact(PANEL));
    for ((panel, b), o) in panels.zip(out.chunks_exact_mut(PANEL)) {
        // SAFETY: 32 floats of bias and of out (whole chunks), read and
        // written unaligned.
        let mut acc: [__m256; 4] =
            std::array::from_fn(|q| unsafe { _mm256_loadu_ps(b[8 * q..].as_ptr()) });
        for (row, &xv) in panel.chunks_exact(ROW).zip(x) {
            let xs = _mm256_set1_ps(xv);
            for (q, a) in acc.iter_mut().enumerate() {
                // SAFETY: a row is ROW (16) words: four words (eight f16
                // values, columns 8q..8q + 8 in order) at 4q, read unaligned.
                let w = unsafe { _mm256_cvtph_ps(_mm_loadu_si128(row[4 * q..].as_ptr().cast())) };
                *a = _mm256_add_ps(*a, _mm256_mul_ps(xs, w));
            }
        }
        for (q, a) in acc.into_iter().enumerate() {
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(o[8 * q..].as_mut_ptr(), a) };
        }
    }
}

/// out[v] = x · row v of a lifted f16 head (`words`: `(out.len(), x.len() /
/// 2)`, row-major), for one row of x ([`inputs`]' scaled row, whole
/// sixteens long), as the twin's sixteen lanes (lane j adds the products
/// k ≡ j mod 16, in order of k) put together by `combine`.
#[target_feature(enable = "avx2,f16c")]
pub fn head(x: &[f32], words: &[u32], combine: fn([f32; 16]) -> f32, out: &mut [f32]) {
    let h = x.len() / 2;
    for (o, row) in out.iter_mut().zip(words.chunks_exact(h)) {
        let mut acc = [_mm256_setzero_ps(); 2]; // lanes 0..8, 8..16
        for (xs, ws) in x.chunks_exact(16).zip(row.chunks_exact(8)) {
            for (half, a) in acc.iter_mut().enumerate() {
                // SAFETY: eight floats of x and four words (eight f16
                // values, elements 8·half.. of the sixteen) are there
                // (whole chunks), read unaligned.
                let (xv, w) = unsafe {
                    let w = _mm_loadu_si128(ws[4 * half..].as_ptr().cast());
                    (_mm256_loadu_ps(xs[8 * half..].as_ptr()), _mm256_cvtph_ps(w))
                };
                *a = _mm256_add_ps(*a, _mm256_mul_ps(xv, w));
            }
        }
        let mut lanes = [0.0f32; 16];
        // SAFETY: sixteen floats, written unaligned.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(lanes[8..].as_mut_ptr(), acc[1]);
        }
        *o = combine(lanes);
    }
}

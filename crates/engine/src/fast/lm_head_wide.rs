//! [`lm_head`](super::lm_head)'s decode step over a row-major head of two
//! weights a word (f16 lifted, bf16) eight rows at a time in AVX-512, where
//! the column panels run their AVX-512 copy (Intel cores). One row at a
//! time, a row's two chains of adds wait on each other's latency and the
//! head read at about 60 % of the blocks' speed per weight (perf, one core
//! of a Xeon, 124M, f16: head samples per matmul sample 0.82); here a row's
//! sixteen lanes are one register and eight rows' sums are in flight
//! (0.58 with each row's lines fetched ahead). Lane j of a row adds the
//! products k ≡ j mod 16 in order of k, put together by `combine`: the
//! twin's sums.

use std::arch::x86_64::*;

use super::quant_avx512::{load, store};

/// How a head's words hold its weights.
#[derive(Clone, Copy)]
pub enum Words {
    /// Lifted f16 ([`Matrix::lift_f16`](crate::storage::matrix::Matrix::lift_f16)),
    /// x at 2⁻¹⁰ times ([`f16c::inputs`](super::f16c::inputs)): `vcvtph2ps`
    /// gives 2¹⁰ times each weight, so each product is the twin's.
    F16Lifted,
    /// bf16: a weight is its sixteen bits shifted into an f32's top half.
    Bf16,
}

/// Rows a block: eight rows' sums and x in registers, well inside 32.
const ROWS: usize = 8;

/// How far along each row its lines are fetched ahead (`fast::touch`'s
/// why), in words: 1 KiB.
const AHEAD: usize = 256;

/// out[v] = x · row v of `words` (`(out.len(), x.len() / 2)`, row-major;
/// x whole sixteens long) for the rows of whole blocks of eight; returns
/// how many rows that is (the caller's loop does the rest). For a CPU with
/// AVX-512 F and F16C.
#[target_feature(enable = "avx512f,f16c")]
pub fn rows(
    x: &[f32],
    words: &[u32],
    kind: Words,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32],
) -> usize {
    let h = x.len() / 2; // words a row
    let whole = out.len() / ROWS * ROWS;
    for (o, block) in out[..whole].chunks_exact_mut(ROWS).zip(words.chunks_exact(ROWS * h)) {
        let mut acc = [_mm512_setzero_ps(); ROWS];
        for (p, xs) in x.chunks_exact(16).enumerate() {
            let xv = load(xs);
            for (i, a) in acc.iter_mut().enumerate() {
                if p % 2 == 0 {
                    super::touch::touch(block, i * h + 8 * p + AHEAD); // once a line
                }
                let ws = &block[i * h + 8 * p..][..8];
                // SAFETY: eight words (sixteen weights, elements 16p.. of
                // row i in order) are there (sliced), read unaligned.
                let ws = unsafe { _mm256_loadu_si256(ws.as_ptr().cast()) };
                let w = match kind {
                    Words::F16Lifted => _mm512_cvtph_ps(ws),
                    Words::Bf16 => {
                        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(ws)))
                    }
                };
                *a = _mm512_add_ps(*a, _mm512_mul_ps(xv, w));
            }
        }
        for (o, a) in o.iter_mut().zip(acc) {
            let mut lanes = [0.0f32; 16];
            store(&mut lanes, a);
            *o = combine(lanes);
        }
    }
    whole
}

/// Whether [`rows`] runs for a decode step over a head `n_embd` wide: the
/// column panels' AVX-512 copy runs, the CPU has F16C, and the rows are
/// whole sixteens.
pub fn takes(n_embd: usize) -> bool {
    super::parallel::wide_panels() && is_x86_feature_detected!("f16c") && n_embd.is_multiple_of(16)
}

//! [`int4_panel_lanes`](super::int4_panel_lanes) in AVX-512: a group's weights looked up, not
//! computed. A row's group has sixteen weights it can hold (`field ·
//! scale`, the fields −8..7): one multiply makes that table, and each lane
//! picks its two weights from it by its byte's nibbles (`vpermps` reads an
//! index's low four bits), one widening and one shift a group. Eight rows'
//! sums in registers over all of x.
//!
//! int8 ([`int8_panel_lanes`](super::int8_panel_lanes)): a run's sixteen
//! fields widened and converted in two instructions, times their scales,
//! one register of sums a row: the eight rows in one pass over x, where
//! AVX2's eight-lane copy takes two passes of twice the instructions. f32
//! likewise (perf, one core of a Xeon, 124M f32 decode: the head's samples
//! per matmul sample 0.50 → 0.46, about the matmuls' speed per weight).

use std::arch::x86_64::*;

use super::{Lanes, GROUP, ROWS, RUN};
use crate::fast::quant_avx512::{load, store};
use crate::fast::touch::{ahead, touch};

#[target_feature(enable = "avx512f")]
pub fn int4_panel_lanes(x: &[f32], words: &[u32], scales: &[f32]) -> Lanes {
    let signed = signed();
    let mut acc = [_mm512_setzero_ps(); ROWS];
    let groups = words.chunks_exact(ROWS * GROUP / 8).zip(scales.chunks_exact(ROWS));
    for (g, (xg, (group, s))) in x.chunks_exact(GROUP).zip(groups).enumerate() {
        let (x0, x1) = (load(xg), load(&xg[RUN..]));
        // The group's two lines of words (touch's why).
        touch(words, ROWS * GROUP / 8 * g + ahead::<u32>());
        touch(words, ROWS * GROUP / 8 * g + 16 + ahead::<u32>());
        for ((a, w), &s) in acc.iter_mut().zip(group.chunks_exact(GROUP / 8)).zip(s) {
            assert!(w.len() == GROUP / 8);
            // SAFETY: the group's sixteen bytes are there (just checked), read unaligned.
            let lo = _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(w.as_ptr().cast()) });
            let table = _mm512_mul_ps(signed, _mm512_set1_ps(s));
            let w0 = _mm512_permutexvar_ps(lo, table);
            let w1 = _mm512_permutexvar_ps(_mm512_srli_epi32::<4>(lo), table);
            *a = _mm512_add_ps(*a, _mm512_mul_ps(x0, w0));
            *a = _mm512_add_ps(*a, _mm512_mul_ps(x1, w1));
        }
    }
    acc.map(|a| lanes(a))
}

/// [`super::panel_lanes`] in AVX-512: a row's sixteen lanes in one
/// register, the panel's eight rows over all of x in one pass.
#[target_feature(enable = "avx512f")]
pub fn panel_lanes(x: &[f32], panel: &[f32]) -> Lanes {
    let mut acc = [_mm512_setzero_ps(); ROWS];
    for (xr, runs) in x.chunks_exact(RUN).zip(panel.chunks_exact(ROWS * RUN)) {
        let xv = load(xr);
        for (a, run) in acc.iter_mut().zip(runs.chunks_exact(RUN)) {
            *a = _mm512_add_ps(*a, _mm512_mul_ps(xv, load(run)));
        }
    }
    acc.map(|a| lanes(a))
}

/// [`super::int8_panel_lanes`] in AVX-512 (`scales`: each row's scale, or
/// every column's): lane j of row i adds `x[k] · (field · scale)` for k ≡
/// j mod 16 in order of k, the twin's products and order.
#[target_feature(enable = "avx512f")]
pub fn int8_panel_lanes(x: &[f32], q: &[i8], scales: Result<[f32; ROWS], &[f32]>) -> Lanes {
    let rows = scales.map(|rows| rows.map(|s| _mm512_set1_ps(s)));
    let mut acc = [_mm512_setzero_ps(); ROWS];
    for (p, (xr, runs)) in x.chunks_exact(RUN).zip(q.chunks_exact(ROWS * RUN)).enumerate() {
        let xv = load(xr);
        // The run's two lines, AVX2's own speed without this (touch's why).
        touch(q, ROWS * RUN * p + ahead::<i8>());
        touch(q, ROWS * RUN * p + 64 + ahead::<i8>());
        // The scales of this run's columns: the same for every row.
        let s = match rows {
            Ok(rows) => rows,
            Err(cols) => [load(&cols[RUN * p..]); ROWS],
        };
        for ((a, run), s) in acc.iter_mut().zip(runs.chunks_exact(RUN)).zip(s) {
            // SAFETY: a run's sixteen bytes are there (chunks_exact), read unaligned.
            let q = _mm512_cvtepi8_epi32(unsafe { _mm_loadu_si128(run.as_ptr().cast()) });
            let w = _mm512_mul_ps(_mm512_cvtepi32_ps(q), s);
            *a = _mm512_add_ps(*a, _mm512_mul_ps(xv, w));
        }
    }
    acc.map(|a| lanes(a))
}

/// A row's register of sums as its sixteen lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn lanes(a: __m512) -> [f32; RUN] {
    let mut lanes = [0.0f32; RUN];
    store(&mut lanes, a);
    lanes
}

/// [`super::int4_panel_weights`] by the same lookup.
#[target_feature(enable = "avx512f")]
pub fn int4_panel_weights(words: &[u32], scales: &[f32], out: &mut [f32]) {
    let groups = words.chunks_exact(ROWS * GROUP / 8).zip(scales.chunks_exact(ROWS));
    for ((group, s), runs) in groups.zip(out.chunks_exact_mut(2 * ROWS * RUN)) {
        let (lo, hi) = runs.split_at_mut(ROWS * RUN);
        let rows = group.chunks_exact(GROUP / 8).zip(s);
        for ((w, &s), (lo, hi)) in rows.zip(lo.chunks_exact_mut(RUN).zip(hi.chunks_exact_mut(RUN)))
        {
            assert!(w.len() == GROUP / 8 && lo.len() == RUN && hi.len() == RUN);
            // SAFETY: the group's sixteen bytes are there (just checked), read unaligned.
            let idx = _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(w.as_ptr().cast()) });
            let table = _mm512_mul_ps(signed(), _mm512_set1_ps(s));
            // SAFETY: sixteen floats each (just checked), written unaligned.
            unsafe {
                _mm512_storeu_ps(lo.as_mut_ptr(), _mm512_permutexvar_ps(idx, table));
                let hi_idx = _mm512_srli_epi32::<4>(idx);
                _mm512_storeu_ps(hi.as_mut_ptr(), _mm512_permutexvar_ps(hi_idx, table));
            }
        }
    }
}

/// Entry u: `u` as a signed nibble (the table a scale multiplies).
#[inline]
#[target_feature(enable = "avx512f")]
fn signed() -> __m512 {
    _mm512_setr_ps(
        0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0,
    )
}

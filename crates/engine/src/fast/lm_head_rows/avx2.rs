//! The f32 and int8 row panels' loops in AVX2 (`super`'s portable ones'
//! lanes and order: the same bits).

use std::arch::x86_64::*;

use super::{Lanes, ROWS, RUN};

/// [`super::panel_lanes`] in AVX2: each row's sixteen lanes in two
/// registers for all of x, each lane's products added in order.
#[target_feature(enable = "avx2")]
pub fn panel_lanes(x: &[f32], panel: &[f32]) -> Lanes {
    let load = |v: &[f32]| {
        assert!(v.len() >= 8);
        // SAFETY: eight floats are there, read unaligned.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    };
    let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
    for (xr, runs) in x.chunks_exact(RUN).zip(panel.chunks_exact(ROWS * RUN)) {
        let (x0, x1) = (load(xr), load(&xr[8..]));
        for (a, run) in acc.iter_mut().zip(runs.chunks_exact(RUN)) {
            a[0] = _mm256_add_ps(a[0], _mm256_mul_ps(x0, load(run)));
            a[1] = _mm256_add_ps(a[1], _mm256_mul_ps(x1, load(&run[8..])));
        }
    }
    acc.map(|[a0, a1]| {
        let mut lanes = [0.0f32; RUN];
        // SAFETY: sixteen floats, written unaligned.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), a0);
            _mm256_storeu_ps(lanes[8..].as_mut_ptr(), a1);
        }
        lanes
    })
}

/// [`super::int8_panel_lanes`] in AVX2: four rows at a time over all of
/// x (eight rows' sums and the widening's temporaries would spill AVX2's
/// sixteen registers), the panel's first half of each run then the
/// second, which the first pass left in L1. `scales`: each row's scale,
/// or every column's.
#[target_feature(enable = "avx2")]
pub fn int8_panel_lanes(x: &[f32], q: &[i8], scales: Result<[f32; ROWS], &[f32]>) -> Lanes {
    let load = |v: &[f32]| {
        assert!(v.len() >= 8);
        // SAFETY: eight floats are there, read unaligned.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    };
    // Eight fields as f32 (exact), times their scales: the twin's weights.
    let weights = |q: &[i8], s: __m256| {
        assert!(q.len() >= 8);
        // SAFETY: eight bytes are there, read unaligned.
        let q = unsafe { _mm_loadl_epi64(q.as_ptr().cast()) };
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s)
    };
    let mut lanes = [[0.0f32; RUN]; ROWS];
    for (half, out) in lanes.chunks_exact_mut(ROWS / 2).enumerate() {
        let mut acc = [[_mm256_setzero_ps(); 2]; ROWS / 2];
        for (p, (xr, runs)) in x.chunks_exact(RUN).zip(q.chunks_exact(ROWS * RUN)).enumerate() {
            let (x0, x1) = (load(xr), load(&xr[8..]));
            let cols = scales.map_err(|s| (load(&s[RUN * p..]), load(&s[RUN * p + 8..])));
            for (i, a) in acc.iter_mut().enumerate() {
                let row = half * ROWS / 2 + i;
                let run = &runs[row * RUN..][..RUN];
                let (s0, s1) = match cols {
                    Ok(rows) => (_mm256_set1_ps(rows[row]), _mm256_set1_ps(rows[row])),
                    Err(cols) => cols,
                };
                a[0] = _mm256_add_ps(a[0], _mm256_mul_ps(x0, weights(run, s0)));
                a[1] = _mm256_add_ps(a[1], _mm256_mul_ps(x1, weights(&run[8..], s1)));
            }
        }
        for (l, [a0, a1]) in out.iter_mut().zip(acc) {
            // SAFETY: sixteen floats, written unaligned.
            unsafe {
                _mm256_storeu_ps(l.as_mut_ptr(), a0);
                _mm256_storeu_ps(l[8..].as_mut_ptr(), a1);
            }
        }
    }
    lanes
}

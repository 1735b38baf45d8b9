//! [`lm_head`](super::lm_head)'s decode step over an f32 head in row panels
//! ([`storage::row_panels`](crate::storage::row_panels)): a panel's eight
//! dot products at once, its runs read in the order they lie, so the head
//! is one stream. Each dot product is the twin's: sixteen lanes (lane j adds
//! the products k ≡ j mod 16, in order of k) put together by `combine`.

use std::ops::Range;

use crate::storage::row_panels::{locate, ROWS, RUN};

/// The lanes of one panel's rows.
type Lanes = [[f32; RUN]; ROWS];

/// out[v] = x · row `vr.start + v` of a `(rows, x.len())` f32 head in row
/// panels (`values`), for one row of x. `avx2`: the CPU has AVX2.
#[inline(always)]
pub fn run(
    x: &[f32], // (cols)
    values: &[f32],
    rows: usize,
    vr: Range<usize>,
    combine: fn([f32; RUN]) -> f32,
    avx2: bool,
    out: &mut [f32], // (vr.len())
) {
    let cols = x.len();
    let whole = vr.end.min(rows / ROWS * ROWS); // rows of vr's whole panels end here
    let mut v = vr.start;
    while v < vr.end {
        let o = &mut out[v - vr.start..];
        if v.is_multiple_of(ROWS) && v + ROWS <= whole {
            let panel = &values[v * cols..][..ROWS * cols]; // (cols / RUN, ROWS, RUN)
            let lanes = panel_lanes(x, panel, avx2);
            for (o, l) in o.iter_mut().zip(lanes) {
                *o = combine(l);
            }
            v += ROWS;
            continue;
        }
        // A row outside vr's whole panels (the head's last rows, row-major):
        // its runs one by one, the same lanes.
        let mut lanes = [0.0; RUN];
        for (p, xr) in x.chunks_exact(RUN).enumerate() {
            let run = &values[locate(v, RUN * p, rows, cols)..][..RUN];
            for j in 0..RUN {
                lanes[j] += xr[j] * run[j];
            }
        }
        o[0] = combine(lanes);
        v += 1;
    }
}

/// The lanes of x · each row of one panel (`(x.len() / RUN, ROWS, RUN)`).
#[inline(always)]
fn panel_lanes(x: &[f32], panel: &[f32], avx2: bool) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` only where the CPU has AVX2 (the caller checked).
        return unsafe { avx2::panel_lanes(x, panel) };
    }
    let _ = avx2;
    let mut lanes = [[0.0f32; RUN]; ROWS];
    for (xr, runs) in x.chunks_exact(RUN).zip(panel.chunks_exact(ROWS * RUN)) {
        for (l, run) in lanes.iter_mut().zip(runs.chunks_exact(RUN)) {
            for j in 0..RUN {
                l[j] += xr[j] * run[j];
            }
        }
    }
    lanes
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
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
}

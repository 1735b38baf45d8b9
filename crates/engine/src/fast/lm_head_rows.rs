//! [`lm_head`](super::lm_head)'s decode step over an f32, int8 or int4 head in row panels
//! ([`storage::row_panels`](crate::storage::row_panels)): a panel's eight
//! dot products at once, its runs read in the order they lie, so the head
//! is one stream. Each dot product is the twin's: sixteen lanes (lane j adds
//! the products k ≡ j mod 16, in order of k) put together by `combine`.

use std::ops::Range;

use crate::storage::format::{Format, GROUP};
use crate::storage::row_panels::{int4_locate, locate, ROWS, RUN};

// The loops in AVX2 (f32, int8) and AVX-512 (f32, int8, int4), a file each.
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

/// The lanes of one panel's rows.
type Lanes = [[f32; RUN]; ROWS];

/// A head in row panels: its f32 values, its int8 fields (one byte
/// each) and their scales, or its int4 words and group scales in the
/// panels' order; weight = field · scale, as `Format::load`.
#[derive(Clone, Copy)]
pub enum Panelled<'a> {
    F32(&'a [f32]),
    Int8(&'a [i8], Scales<'a>),
    Int4(&'a [u32], &'a [f32]),
}

impl Panelled<'_> {
    /// Weight `(r, c)` of a `(rows, cols)` head.
    #[inline(always)]
    fn weight(self, r: usize, c: usize, rows: usize, cols: usize) -> f32 {
        match self {
            Panelled::F32(values) => values[locate(r, c, rows, cols)],
            Panelled::Int8(q, scales) => f32::from(q[locate(r, c, rows, cols)]) * scales.at(r, c),
            Panelled::Int4(words, scales) => {
                Format::Int4.load(words, scales, int4_locate(r, c, rows, cols), 0)
            }
        }
    }
}

/// An int8 head's scales: one for the tensor (int8-tensor), one a row or
/// one a column (int8's channels).
#[derive(Clone, Copy)]
pub enum Scales<'a> {
    Tensor(f32),
    Rows(&'a [f32]),
    Cols(&'a [f32]),
}

impl Scales<'_> {
    /// The scale of row `r`'s column `c`.
    #[inline(always)]
    fn at(self, r: usize, c: usize) -> f32 {
        match self {
            Scales::Tensor(s) => s,
            Scales::Rows(s) => s[r],
            Scales::Cols(s) => s[c],
        }
    }
}

/// out[r, v] = x[r] · row `vr.start + v` of a `(rows, cols)` head in row
/// panels, for each row r of x. One row (a decode step) reads each panel
/// straight; more rows (a prefill's) first read a panel's weights into f32
/// row panels (24 KiB for 768 columns: in L1), then dot every row of x with
/// them, so each weight is decoded once, not once a row. `avx2`: the CPU
/// has AVX2.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // `lm_head::run`'s, and the head's shape
pub fn run(
    x: &[f32], // (n_out, cols)
    cols: usize,
    head: Panelled,
    rows: usize,
    vr: Range<usize>,
    combine: fn([f32; RUN]) -> f32,
    avx2: bool,
    out: &mut [f32], // (n_out, vr.len())
) {
    let (n, single) = (vr.len(), x.len() == cols);
    let whole = vr.end.min(rows / ROWS * ROWS); // rows of vr's whole panels end here
    let mut weights = Vec::new(); // (cols / RUN, ROWS, RUN) one panel's, rows of x > 1
    let mut v = vr.start;
    while v < vr.end {
        if v.is_multiple_of(ROWS) && v + ROWS <= whole {
            let panel = v * cols..(v + ROWS) * cols; // (cols / RUN, ROWS, RUN)
            if single {
                let lanes = match head {
                    Panelled::F32(values) => panel_lanes(x, &values[panel], avx2),
                    Panelled::Int8(q, scales) => int8_panel_lanes(x, &q[panel], scales, v, avx2),
                    Panelled::Int4(words, scales) => {
                        let (words, scales) = int4_panel(words, scales, panel);
                        int4_panel_lanes(x, words, scales)
                    }
                };
                for (o, l) in out[v - vr.start..].iter_mut().zip(lanes) {
                    *o = combine(l);
                }
            } else {
                let panel = head.panel_weights(v, panel, &mut weights);
                for (xr, o) in x.chunks_exact(cols).zip(out.chunks_exact_mut(n)) {
                    let lanes = panel_lanes(xr, panel, avx2);
                    for (o, l) in o[v - vr.start..].iter_mut().zip(lanes) {
                        *o = combine(l);
                    }
                }
            }
            v += ROWS;
            continue;
        }
        // A row outside vr's whole panels (the head's last rows, row-major):
        // its runs one by one, the same lanes.
        for (xr, o) in x.chunks_exact(cols).zip(out.chunks_exact_mut(n)) {
            let mut lanes = [0.0; RUN];
            for (p, xr) in xr.chunks_exact(RUN).enumerate() {
                for j in 0..RUN {
                    lanes[j] += xr[j] * head.weight(v, RUN * p + j, rows, cols);
                }
            }
            o[v - vr.start] = combine(lanes);
        }
        v += 1;
    }
}

/// The words (`(cols / GROUP, ROWS, 4)`) and scales (`(cols / GROUP,
/// ROWS)`) of the int4 panel whose fields are `panel`.
#[inline(always)]
fn int4_panel<'a>(
    words: &'a [u32],
    scales: &'a [f32],
    panel: Range<usize>,
) -> (&'a [u32], &'a [f32]) {
    (&words[panel.start / 8..panel.end / 8], &scales[panel.start / GROUP..panel.end / GROUP])
}

impl<'a> Panelled<'a> {
    /// The weights of the panel whose values or fields are `panel` (its
    /// first row `v0`) as f32 row panels (`(cols / RUN, ROWS, RUN)`): an
    /// f32 head's own, an int8 or int4 head's read into `buf`, each
    /// `Format::load`'s.
    fn panel_weights<'b>(self, v0: usize, panel: Range<usize>, buf: &'b mut Vec<f32>) -> &'b [f32]
    where
        'a: 'b,
    {
        match self {
            Panelled::F32(values) => return &values[panel],
            Panelled::Int8(q, scales) => {
                buf.resize(panel.len(), 0.0);
                for (at, w) in buf.iter_mut().enumerate() {
                    let (p, i, j) = (at / (ROWS * RUN), at / RUN % ROWS, at % RUN);
                    *w = f32::from(q[panel.start + at]) * scales.at(v0 + i, RUN * p + j);
                }
            }
            Panelled::Int4(words, scales) => {
                buf.resize(panel.len(), 0.0);
                let (words, scales) = int4_panel(words, scales, panel);
                int4_panel_weights(words, scales, buf);
            }
        }
        buf
    }
}

/// An int4 panel's weights (`words`, `scales` as [`int4_panel`] gives
/// them) as f32 row panels (`out`: `(cols / RUN, ROWS, RUN)`): a group's
/// low nibbles are run `2g`, its high nibbles run `2g + 1`.
fn int4_panel_weights(words: &[u32], scales: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx512() {
        // SAFETY: the CPU has AVX-512 F (just checked).
        return unsafe { avx512::int4_panel_weights(words, scales, out) };
    }
    let groups = words.chunks_exact(ROWS * GROUP / 8).zip(scales.chunks_exact(ROWS));
    for ((group, s), runs) in groups.zip(out.chunks_exact_mut(2 * ROWS * RUN)) {
        let (lo, hi) = runs.split_at_mut(ROWS * RUN);
        for (i, (w, &s)) in group.chunks_exact(GROUP / 8).zip(s).enumerate() {
            for t in 0..RUN {
                let byte = w[t / 4] >> (8 * (t % 4));
                lo[i * RUN + t] = nibble(byte) * s;
                hi[i * RUN + t] = nibble(byte >> 4) * s;
            }
        }
    }
}

/// The low four bits of `bits`, sign-extended (an int4 field), as f32.
#[inline(always)]
fn nibble(bits: u32) -> f32 {
    (((bits << 28) as i32) >> 28) as f32
}

/// The lanes of x · each row of one panel (`(x.len() / RUN, ROWS, RUN)`).
#[inline(always)]
fn panel_lanes(x: &[f32], panel: &[f32], avx2: bool) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        if super::parallel::wide_panels() {
            // SAFETY: wide panels only where the CPU has AVX-512 F.
            return unsafe { avx512::panel_lanes(x, panel) };
        }
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

/// [`panel_lanes`] for an int8 panel (`q`: `(x.len() / RUN, ROWS, RUN)`
/// fields) whose first row is row `v0` of the head.
#[inline(always)]
fn int8_panel_lanes(x: &[f32], q: &[i8], scales: Scales, v0: usize, avx2: bool) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        let row_scales = match scales {
            Scales::Cols(s) => Err(s),
            _ => Ok(std::array::from_fn(|i| scales.at(v0 + i, 0))),
        };
        // AVX-512 where the column panels run theirs (Intel cores: a
        // 512-bit operation is one there, two halves on AMD's).
        if super::parallel::wide_panels() {
            // SAFETY: wide panels only where the CPU has AVX-512 F.
            return unsafe { avx512::int8_panel_lanes(x, q, row_scales) };
        }
        // SAFETY: `avx2` only where the CPU has AVX2 (the caller checked).
        return unsafe { avx2::int8_panel_lanes(x, q, row_scales) };
    }
    let _ = avx2;
    let mut lanes = [[0.0f32; RUN]; ROWS];
    for (p, (xr, runs)) in x.chunks_exact(RUN).zip(q.chunks_exact(ROWS * RUN)).enumerate() {
        for (i, (l, run)) in lanes.iter_mut().zip(runs.chunks_exact(RUN)).enumerate() {
            for j in 0..RUN {
                l[j] += xr[j] * (f32::from(run[j]) * scales.at(v0 + i, RUN * p + j));
            }
        }
    }
    lanes
}

/// [`panel_lanes`] for an int4 panel (`words`: `(x.len() / GROUP, ROWS,
/// 4)`, a group's bytes paired as `row_panels` lays them; `scales`:
/// `(x.len() / GROUP, ROWS)`): lane t adds a group's column t, then its
/// column t + 16, the twin's order.
#[inline(always)]
fn int4_panel_lanes(x: &[f32], words: &[u32], scales: &[f32]) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx512() {
        // SAFETY: the CPU has AVX-512 F (just checked).
        return unsafe { avx512::int4_panel_lanes(x, words, scales) };
    }
    // Elsewhere (tests without AVX-512: the layout is made only where it
    // runs) the panel's weights, then the f32 panel's loop: the same lanes.
    let mut weights = vec![0.0; x.len() * ROWS]; // (x.len() / RUN, ROWS, RUN)
    int4_panel_weights(words, scales, &mut weights);
    panel_lanes(x, &weights, false)
}

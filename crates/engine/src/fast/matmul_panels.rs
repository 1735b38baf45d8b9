//! The CPU engine's decode and prefill loops over an f16 or bf16 matrix in
//! column panels (the layout: [`storage::panels`](crate::storage::panels)). A
//! decode step reads the matrix as one sequential stream and keeps a panel's
//! outputs in registers for all of k. Each output still sums its k products
//! one by one in order after its bias, so the numbers are the row-major
//! path's bit for bit.

use std::ops::Range;

use super::touch::{ahead, touch};
use crate::storage::pair::Pair;
use crate::storage::panels::{columns, PANEL, ROW};

/// A panel's outputs (or one row's values), halves apart: `[even columns, odd columns]`.
type Sums = [[f32; ROW]; 2];

/// `out = x @ w + bias` for columns `c` of a `(k, n)` matrix of two weights
/// a word (`pair`) in panels (`c` whole panels; `bias` and `out` hold only
/// those columns: `(c.len())`, `(m, c.len())`). For f16 read raw, x is
/// already scaled, as [`matmul`](super::matmul)'s row-major path does.
#[inline(always)]
pub fn run<P: Pair>(
    x: &[f32], // (m, k)
    words: &[u32],
    pair: P,
    k: usize,
    c: Range<usize>,
    bias: &[f32],
    out: &mut [f32],
) {
    let width = c.len();
    let stream = columns(words, k, c); // (c.len() / PANEL, k, ROW) the wanted panels
    let panels = stream.chunks_exact(k * ROW);
    let biases = bias.chunks_exact(PANEL);
    if x.len() == k {
        // A decode step: each weight is read once, straight into the sums.
        for (p, (b, o)) in biases.zip(out.chunks_exact_mut(PANEL)).enumerate() {
            interleave(&add_words(start(b), x, &stream[p * k * ROW..], pair), o);
        }
        return;
    }
    // A prefill: each panel widened a block of rows at a time (in L1), and
    // every row of x through the block, its sums carried from block to block.
    let mut wide = vec![[[0.0; ROW]; 2]; K_BLOCK.min(k)]; // (K_BLOCK, 2, ROW) halves apart
    let mut sums = vec![[[0.0; ROW]; 2]; x.len() / k]; // (m, 2, ROW) one panel's outputs
    for (p, (panel, b)) in panels.zip(biases).enumerate() {
        sums.fill(start(b));
        for (kb, block) in panel.chunks(K_BLOCK * ROW).enumerate() {
            for (w, r) in wide.iter_mut().zip(block.chunks_exact(ROW)) {
                *w = widen(words_of(r), pair);
            }
            let rows = &wide[..block.len() / ROW];
            let x_block = |r: usize| &x[r * k + kb * K_BLOCK..][..rows.len()];
            through_block(&mut sums, x_block, rows);
        }
        for (s, or) in sums.iter().zip(out.chunks_exact_mut(width)) {
            interleave(s, &mut or[p * PANEL..][..PANEL]);
        }
    }
}

/// Rows of x a prefill puts through a block of a panel at once: four where
/// the core runs 512-bit operations whole (their sums fill eight of its 32
/// registers), two in AVX2's sixteen, one in wasm (SIMD128's sixteen
/// registers hold one row's sums and little else).
#[inline(always)]
pub(super) fn rows_at_once() -> usize {
    match (cfg!(target_arch = "wasm32"), super::parallel::wide_panels()) {
        (true, _) => 1,
        (false, true) => 4,
        (false, false) => 2,
    }
}

/// Rows of a panel a prefill widens at a time: 8 KB of f32, which stay in
/// L1 while every row of x goes through them.
pub(super) const K_BLOCK: usize = 64;

/// A panel's bias, halves apart: where its sums start.
#[inline(always)]
fn start(bias: &[f32]) -> Sums {
    let mut sums = [[0.0; ROW]; 2];
    for (i, b) in bias.chunks_exact(2).enumerate() {
        (sums[0][i], sums[1][i]) = (b[0], b[1]);
    }
    sums
}

/// `sums` plus each row's products, in order, the rows of the panel that
/// starts `stream` (`(x.len(), ROW)` words, the later panels after it)
/// widened as they are read.
#[inline(always)]
fn add_words<P: Pair>(sums: Sums, x: &[f32], stream: &[u32], pair: P) -> Sums {
    #[cfg(target_arch = "wasm32")]
    return simd128::add_words(sums, x, stream, pair);
    // Plain loops, no iterator handed down: inside the AVX2 copy of the
    // kernel a call the compiler does not inline runs without AVX2 (a
    // `Zip::next` per row made the decode step 2.4x slower natively).
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut sums = sums;
        for (i, (row, &xv)) in stream[..x.len() * ROW].chunks_exact(ROW).zip(x).enumerate() {
            touch(stream, i * ROW + ahead::<u32>());
            add(&mut sums, xv, &widen(words_of(row), pair));
        }
        sums
    }
}

/// `sums` plus each row's products, in order (`rows`: widened panel rows).
#[inline(always)]
fn add_wide(sums: Sums, x: &[f32], rows: &[Sums]) -> Sums {
    #[cfg(target_arch = "wasm32")]
    return simd128::add_wide(sums, x, rows);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut sums = sums;
        for (row, &xv) in rows.iter().zip(x) {
            add(&mut sums, xv, row);
        }
        sums
    }
}

/// A panel's outputs, or one of its rows of weights widened to f32, in the
/// shape a panel layout keeps them: what a prefill's block adds up.
pub(super) trait Row: Copy {
    /// `self += xv · row`, lane by lane.
    fn add(&mut self, xv: f32, row: &Self);
    /// `self` plus each row's products, in order (SIMD128's loop in wasm).
    fn add_all(self, x: &[f32], rows: &[Self]) -> Self;
}

impl Row for Sums {
    #[inline(always)]
    fn add(&mut self, xv: f32, row: &Sums) {
        add(self, xv, row);
    }

    #[inline(always)]
    fn add_all(self, x: &[f32], rows: &[Sums]) -> Sums {
        add_wide(self, x, rows)
    }
}

/// Every row r of x (its part in this block: `x_block(r)`) through a block
/// of a panel's rows in f32 (`rows`), `R` rows of x at a time: `2R` chains
/// of adds in flight where one row's were two, each row of the block loaded
/// once for `R` rows (one core of a Xeon with AMX, 124M, 64-token prefill:
/// f32 223 → 158 ms, f16 185 → 165). Trait methods, not closures, for the
/// two steps: the compiler built closures as calls without AVX-512, 3–4x
/// slower.
#[inline(always)]
pub(super) fn through_block<'a, S: Row>(
    sums: &mut [S], // (m) one panel's outputs
    x_block: impl Fn(usize) -> &'a [f32],
    rows: &[S],
) {
    match rows_at_once() {
        4 => in_runs::<S, 4>(sums, x_block, rows),
        2 => in_runs::<S, 2>(sums, x_block, rows),
        _ => in_runs::<S, 1>(sums, x_block, rows),
    }
}

/// [`through_block`], `R` rows of x at a time.
#[inline(always)]
fn in_runs<'a, S: Row, const R: usize>(
    sums: &mut [S], // (m) one panel's outputs
    x_block: impl Fn(usize) -> &'a [f32],
    rows: &[S],
) {
    let mut r = 0;
    while R > 1 && r + R <= sums.len() {
        let mut these: [S; R] = std::array::from_fn(|i| sums[r + i]);
        let xs: [&[f32]; R] = std::array::from_fn(|i| &x_block(r + i)[..rows.len()]);
        // Indexed loops, no iterator handed down (as `add_words`).
        for i in 0..rows.len() {
            for j in 0..R {
                these[j].add(xs[j][i], &rows[i]);
            }
        }
        sums[r..r + R].copy_from_slice(&these);
        r += R;
    }
    for (i, s) in sums.iter_mut().enumerate().skip(r) {
        *s = s.add_all(x_block(i), rows);
    }
}

/// `sums += xv · row` (the compiler vectorises it natively, AVX2 included;
/// wasm takes SIMD128's loops, one row of x at a time, and never this).
#[inline(always)]
fn add(sums: &mut Sums, xv: f32, [lo, hi]: &Sums) {
    for i in 0..ROW {
        sums[0][i] += xv * lo[i];
        sums[1][i] += xv * hi[i];
    }
}

/// The same loops in SIMD128 intrinsics: the compiler's own code for the
/// portable loop kept the sums in memory and ran at half the row-major
/// path's speed in V8.
#[cfg(target_arch = "wasm32")]
mod simd128 {
    use core::arch::wasm32::*;

    use super::{ahead, touch, Pair, Sums, ROW};

    /// Four vectors of a panel's eight outputs of one half.
    type Half = [v128; ROW / 4];

    fn load(s: &Sums) -> [Half; 2] {
        s.map(|h| {
            std::array::from_fn(|q| f32x4(h[4 * q], h[4 * q + 1], h[4 * q + 2], h[4 * q + 3]))
        })
    }

    fn store(v: [Half; 2]) -> Sums {
        v.map(|h| {
            std::array::from_fn(|i| {
                let v = h[i / 4];
                match i % 4 {
                    0 => f32x4_extract_lane::<0>(v),
                    1 => f32x4_extract_lane::<1>(v),
                    2 => f32x4_extract_lane::<2>(v),
                    _ => f32x4_extract_lane::<3>(v),
                }
            })
        })
    }

    /// `stream`: the panel (`(x.len(), ROW)` words), then the later ones;
    /// each row is one cache line, touched [`ahead`] of its reads.
    #[inline(always)]
    pub fn add_words<P: Pair>(sums: Sums, x: &[f32], stream: &[u32], pair: P) -> Sums {
        let [mut even, mut odd] = load(&sums);
        let panel = &stream[..x.len() * ROW];
        for (i, (row, &xv)) in panel.chunks_exact(ROW).zip(x).enumerate() {
            touch(stream, i * ROW + ahead::<u32>());
            let xs = f32x4_splat(xv);
            for q in 0..ROW / 4 {
                let w = u32x4(row[4 * q], row[4 * q + 1], row[4 * q + 2], row[4 * q + 3]);
                let (lo, hi) = pair.pair4(w);
                even[q] = f32x4_add(even[q], f32x4_mul(xs, lo));
                odd[q] = f32x4_add(odd[q], f32x4_mul(xs, hi));
            }
        }
        store([even, odd])
    }

    #[inline(always)]
    pub fn add_wide(sums: Sums, x: &[f32], rows: &[Sums]) -> Sums {
        let [mut even, mut odd] = load(&sums);
        for (row, &xv) in rows.iter().zip(x) {
            let xs = f32x4_splat(xv);
            let [lo, hi] = load(row);
            for q in 0..ROW / 4 {
                even[q] = f32x4_add(even[q], f32x4_mul(xs, lo[q]));
                odd[q] = f32x4_add(odd[q], f32x4_mul(xs, hi[q]));
            }
        }
        store([even, odd])
    }
}

/// A panel row's values, even columns then odd ([`Pair::pair`]).
#[inline(always)]
fn widen<P: Pair>(row: &[u32; ROW], pair: P) -> Sums {
    let mut halves = [[0.0; ROW]; 2];
    for (i, &w) in row.iter().enumerate() {
        (halves[0][i], halves[1][i]) = pair.pair(w);
    }
    halves
}

#[inline(always)]
fn words_of(row: &[u32]) -> &[u32; ROW] {
    row.try_into().expect("panel rows are ROW words (chunks_exact)")
}

/// A panel's sums back in column order.
#[inline(always)]
fn interleave([even, odd]: &Sums, out: &mut [f32]) {
    for ((o, &e), &d) in out.chunks_exact_mut(2).zip(even).zip(odd) {
        (o[0], o[1]) = (e, d);
    }
}

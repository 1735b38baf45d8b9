//! The CPU engine's decode and prefill loops over an f32 matrix in column
//! panels ([`storage::panels`](crate::storage::panels), one value a word:
//! `(n / PANEL, k, PANEL)`). A decode step reads the matrix as one sequential
//! stream and keeps a panel's 32 outputs in registers for all of k, where the
//! row-major loop streamed four rows at once and loaded and stored every
//! output once per four products (one core, a 124M-shaped block's four
//! matrices: 13–18 GB/s row-major, 25–27 GB/s in panels). Each output still
//! sums its k products one by one in order after its bias, so the numbers
//! are the row-major path's bit for bit.

use std::ops::Range;

use super::matmul_panels::{through_block, Row, K_BLOCK};
use crate::storage::panels::PANEL;

/// A panel's outputs, or one row of a panel.
type Sums = [f32; PANEL];

/// `out = x @ w + bias` for columns `c` (whole panels) of a `(k, n)` f32
/// matrix in panels (`values`: `(n / PANEL, k, PANEL)`); `bias` and `out`
/// hold only those columns: `(c.len())`, `(m, c.len())`.
#[inline(always)]
pub fn run(
    x: &[f32], // (m, k)
    values: &[f32],
    k: usize,
    c: Range<usize>,
    bias: &[f32],
    out: &mut [f32],
) {
    let width = c.len();
    // (c.len() / PANEL, k, PANEL) the wanted panels
    let panels = values[c.start * k..c.end * k].chunks_exact(k * PANEL);
    let biases = bias.chunks_exact(PANEL).map(|b| -> Sums { b.try_into().expect("PANEL") });
    if x.len() == k {
        // A decode step: each weight is read once, straight into the sums.
        // Where the core runs 512-bit operations whole (its copy keeps four
        // panels' sums in eight registers), four panels at once: four
        // streams from memory in flight (one core of a Xeon with AMX, 124M,
        // f32 decode step 50 → 47 ms).
        let four = super::parallel::wide_panels();
        let outs = out.chunks_exact_mut(PANEL);
        let mut parts: Vec<_> = panels.zip(biases).zip(outs).map(|((p, b), o)| (p, b, o)).collect();
        for group in parts.chunks_mut(4) {
            if let (true, [a, b, c, d]) = (four, &mut *group) {
                let sums = add_rows4([a.1, b.1, c.1, d.1], x, [a.0, b.0, c.0, d.0]);
                for ((_, _, o), s) in [a, b, c, d].into_iter().zip(sums) {
                    o.copy_from_slice(&s);
                }
                continue;
            }
            for (panel, b, o) in group {
                o.copy_from_slice(&add_rows(*b, x, panel));
            }
        }
        return;
    }
    // A prefill: a block of a panel's rows (8 KB, in L1) at a time, every
    // row of x through it, its sums carried from block to block.
    let mut sums = vec![[0.0; PANEL]; x.len() / k]; // (m, PANEL) one panel's outputs
    for (p, (panel, b)) in panels.zip(biases).enumerate() {
        sums.fill(b);
        for (kb, block) in panel.chunks(K_BLOCK * PANEL).enumerate() {
            prefill_block(&mut sums, x, k, kb * K_BLOCK, block);
        }
        for (s, or) in sums.iter().zip(out.chunks_exact_mut(width)) {
            or[p * PANEL..][..PANEL].copy_from_slice(s);
        }
    }
}

/// Every row of x (`(sums.len(), k)`; its columns `k0..` in this block)
/// through a block of a panel's rows in f32 (`block`: `(rows, PANEL)`), each
/// row's sums carried on: the prefill step of every panel layout whose
/// weights become f32 a block at a time (f32, int8, int4).
#[inline(always)]
pub(super) fn prefill_block(sums: &mut [Sums], x: &[f32], k: usize, k0: usize, block: &[f32]) {
    let x_block = |r: usize| &x[r * k + k0..][..block.len() / PANEL];
    let block: &[Sums] = bytemuck::cast_slice(block); // (rows, PANEL)
    through_block(sums, x_block, block);
}

impl Row for Sums {
    #[inline(always)]
    fn add(&mut self, xv: f32, row: &Sums) {
        for j in 0..PANEL {
            self[j] += xv * row[j];
        }
    }

    #[inline(always)]
    fn add_all(self, x: &[f32], rows: &[Sums]) -> Sums {
        add_rows(self, x, rows.as_flattened())
    }
}

/// `sums` plus `x[i] · rows[i]` for each row i in order (`rows`: `(x.len(), PANEL)`).
#[inline(always)]
fn add_rows(sums: Sums, x: &[f32], rows: &[f32]) -> Sums {
    #[cfg(target_arch = "wasm32")]
    return simd128::add_rows(sums, x, rows);
    // Indexed loops, no iterator handed down: inside the AVX2 copy of the
    // kernel a call the compiler does not inline runs without AVX2.
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut sums = sums;
        for (i, &xv) in x.iter().enumerate() {
            let row: &Sums = rows[i * PANEL..][..PANEL].try_into().expect("PANEL");
            for j in 0..PANEL {
                sums[j] += xv * row[j];
            }
        }
        sums
    }
}

/// [`add_rows`] for four panels at once (`panels[p]`: `(x.len(), PANEL)`),
/// each output's products in order.
#[inline(always)]
fn add_rows4(sums: [Sums; 4], x: &[f32], panels: [&[f32]; 4]) -> [Sums; 4] {
    let mut sums = sums;
    let panels = panels.map(|p| &p[..x.len() * PANEL]);
    for (i, &xv) in x.iter().enumerate() {
        // Indexed, as `add_rows` (a `Zip` here cost 50 → 56 ms a step).
        for p in 0..4 {
            let row: &Sums = panels[p][i * PANEL..][..PANEL].try_into().expect("PANEL");
            for j in 0..PANEL {
                sums[p][j] += xv * row[j];
            }
        }
    }
    sums
}

/// The same loop in SIMD128 intrinsics, the sums in eight vectors (the
/// compiler's own code for the portable loop keeps them in memory).
#[cfg(target_arch = "wasm32")]
mod simd128 {
    use core::arch::wasm32::*;

    use super::{Sums, PANEL};

    #[inline(always)]
    fn load(s: &[f32]) -> [v128; PANEL / 4] {
        std::array::from_fn(|q| f32x4(s[4 * q], s[4 * q + 1], s[4 * q + 2], s[4 * q + 3]))
    }

    #[inline(always)]
    pub fn add_rows(sums: Sums, x: &[f32], rows: &[f32]) -> Sums {
        let mut acc = load(&sums);
        for (i, &xv) in x.iter().enumerate() {
            let (xs, row) = (f32x4_splat(xv), load(&rows[i * PANEL..][..PANEL]));
            for q in 0..PANEL / 4 {
                acc[q] = f32x4_add(acc[q], f32x4_mul(xs, row[q]));
            }
        }
        let lane = |v: v128, t: usize| match t {
            0 => f32x4_extract_lane::<0>(v),
            1 => f32x4_extract_lane::<1>(v),
            2 => f32x4_extract_lane::<2>(v),
            _ => f32x4_extract_lane::<3>(v),
        };
        std::array::from_fn(|j| lane(acc[j / 4], j % 4))
    }
}

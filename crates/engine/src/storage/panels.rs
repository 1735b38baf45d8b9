//! The CPU engine's layout of an f32, f16, bf16 or int8 block matrix: column panels. Where
//! `matmul`'s row-major path streams eight rows of `w` at once and loads and
//! stores each output once per eight products, a panel holds [`PANEL`]
//! columns of every row one after another, so a decode step reads the
//! matrix as one sequential stream and keeps a panel's outputs in registers
//! for all of k (in SIMD128 and SSE, 20–27 % faster on a 124M-shaped matrix,
//! with the same arithmetic: the eight streams and the outputs' loads and
//! stores held the row-major loop back). Each output
//! still sums its k products one by one in order after its bias, so the
//! numbers are the row-major path's bit for bit.
//!
//! Layout of a `(k, n)` matrix's words (`n` a multiple of [`PANEL`]):
//! `(n / PANEL, k, PANEL / 2)`: panel `p`, row `r`, word `i` holds columns
//! `PANEL · p + 2i` (low half) and `+ 1` (high half), the words row-major
//! order holds at `(r · n + PANEL · p) / 2 + i`. An int8 matrix's panels
//! are the same with four bytes a word (`(n / PANEL, k, PANEL / 4)`, byte t
//! of word i column `PANEL · p + 4i + t`): on a core without AVX-512 its
//! eight row-major streams read ~10 GB/s where one stream reads ~16. An
//! f32 matrix's hold one value a word (`(n / PANEL, k, PANEL)`).

use std::ops::Range;

use super::format::SHARD_ALIGN;
use super::pieces::in_parts;

/// Columns per panel. It divides [`SHARD_ALIGN`], where threads and the
/// coworker split a product, so every part of a product is whole panels.
pub const PANEL: usize = 32;
const _: () = assert!(SHARD_ALIGN.is_multiple_of(PANEL));

/// Words of one row of a panel (two f16 values per word).
pub const ROW: usize = PANEL / 2;

/// Row-major words of a `(k, n)` matrix (`per` elements a word: 1 for f32,
/// 2 for f16, 4 for int8) in panels: `(n / PANEL, k, PANEL / per)`.
/// A panel at a time, natively on every core (with the fresh memory's page
/// faults, most of an f16 model's layout time on one thread).
pub fn from_rows(words: &[u32], k: usize, n: usize, per: usize) -> Vec<u32> {
    let (row, panel) = (n / per, PANEL / per);
    in_parts(words.len(), k * panel, |p, out| {
        for (r, run) in out.chunks_exact_mut(panel).enumerate() {
            run.copy_from_slice(&words[r * row + p * panel..][..panel]);
        }
    })
}

/// [`from_rows`] undone: the row-major words of a `(k, n)` matrix in panels.
pub fn to_rows(panels: &[u32], k: usize, n: usize, per: usize) -> Vec<u32> {
    let (row, panel) = (n / per, PANEL / per);
    let mut words = vec![0; panels.len()];
    for (i, run) in panels.chunks_exact(panel).enumerate() {
        let (p, r) = (i / k, i % k);
        words[r * row + p * panel..][..panel].copy_from_slice(run);
    }
    words
}

/// Where element `(r, c)` of a `(k, n)` matrix in panels (`per` elements a
/// word) is: its word, and its place in the word.
pub fn locate(r: usize, c: usize, k: usize, per: usize) -> (usize, usize) {
    let (p, j) = (c / PANEL, c % PANEL);
    ((p * k + r) * (PANEL / per) + j / per, j % per)
}

/// The words of columns `c` (whole panels) of a `(k, n)` matrix in panels.
pub fn columns(words: &[u32], k: usize, c: Range<usize>) -> &[u32] {
    debug_assert!(c.start.is_multiple_of(PANEL) && c.end.is_multiple_of(PANEL));
    &words[c.start / PANEL * k * ROW..c.end / PANEL * k * ROW]
}

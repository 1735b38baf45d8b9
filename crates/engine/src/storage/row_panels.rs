//! The CPU engine's layout of an f32 or int8 LM head: row panels. A decode step's
//! head loop ([`fast::lm_head_rows`](crate::fast::lm_head_rows)) dots
//! [`ROWS`] rows at once, sixteen columns of each at a time (the twin's
//! sixteen lanes). Row-major, those are eight streams 3 KB apart (GPT-2's
//! 768 columns), and one core read them at 13.5 GB/s where a column-panel
//! matmul streams 31; a row panel holds the eight rows' sixteen-column runs
//! one after another, so the loop reads the head as one stream (one core,
//! 124M f32 decode step 22 → 16.5 ms, the head a third of the bytes; int8's
//! bytes likewise). The values and every dot product's sums are the
//! row-major head's, bit for bit.
//!
//! Layout of a `(rows, cols)` matrix's values (f32 words or int8 bytes; `cols` a multiple of
//! [`RUN`]): the first `rows / ROWS · ROWS` rows as `(rows / ROWS, cols /
//! RUN, ROWS, RUN)`, panel `g`, run `p`, row `i`, column `j` holding
//! element `(ROWS · g + i, RUN · p + j)`; then the last `rows % ROWS` rows
//! row-major. So rows `r0..r1` with `r0` on a panel and `r1` on a panel (or
//! the last row) are the values `r0 · cols..r1 · cols`, laid out the same
//! way: a shard or a thread's part is a slice. (`Matrix`'s methods for
//! this layout are in `layouts.rs`, with the other layouts'.)

use super::format::SHARD_ALIGN;

/// Rows per panel: the rows one decode step's loop dots at once. It divides
/// [`SHARD_ALIGN`], so every shard of a head is whole panels (and its tail).
pub const ROWS: usize = 8;
const _: () = assert!(SHARD_ALIGN.is_multiple_of(ROWS));

/// Columns per run: the twin's sixteen lanes (`fast::lm_head`).
pub const RUN: usize = 16;

/// Where element `(r, c)` of a `(rows, cols)` matrix in row panels is.
#[inline(always)]
pub fn locate(r: usize, c: usize, rows: usize, cols: usize) -> usize {
    if r >= rows / ROWS * ROWS {
        return r * cols + c; // the tail, row-major
    }
    let (g, i, p, j) = (r / ROWS, r % ROWS, c / RUN, c % RUN);
    ((g * (cols / RUN) + p) * ROWS + i) * RUN + j
}

/// Row-major values (f32 words, int8 bytes) of a `(rows, cols)` matrix in row panels.
pub fn from_rows<T: Copy + Default>(values: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); values.len()];
    for (r, row) in values.chunks_exact(cols).enumerate() {
        for (p, run) in row.chunks_exact(RUN).enumerate() {
            out[locate(r, RUN * p, rows, cols)..][..RUN].copy_from_slice(run);
        }
    }
    out
}

/// [`from_rows`] undone.
pub fn to_rows<T: Copy + Default>(values: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); values.len()];
    for (r, row) in out.chunks_exact_mut(cols).enumerate() {
        for (p, run) in row.chunks_exact_mut(RUN).enumerate() {
            run.copy_from_slice(&values[locate(r, RUN * p, rows, cols)..][..RUN]);
        }
    }
    out
}

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
//!
//! An int4 head's row panels ([`int4_from_rows`]) run a group (32 columns,
//! four words) a row: `(rows / ROWS, cols / GROUP, ROWS, GROUP)` fields and
//! the scales likewise `(rows / ROWS, cols / GROUP, ROWS)`, so element `i`'s
//! scale is still scale `i / GROUP` (`Format::load`). Within a group, byte
//! `t` holds columns `t` (low nibble) and `t + 16` (high): widened to
//! sixteen lanes, a group's bytes are the twin's lanes' two fields, with no
//! permute (AVX-512 `lm_head_rows`: one widening and one shift, 9
//! instructions a row's group where row-major words took 11).

use super::format::{GROUP, SHARD_ALIGN};

/// Rows per panel: the rows one decode step's loop dots at once. It divides
/// [`SHARD_ALIGN`], so every shard of a head is whole panels (and its tail).
pub const ROWS: usize = 8;
const _: () = assert!(SHARD_ALIGN.is_multiple_of(ROWS));

/// Columns per run: the twin's sixteen lanes (`fast::lm_head`).
pub const RUN: usize = 16;

/// Where element `(r, c)` of a `(rows, cols)` matrix in row panels is.
#[inline(always)]
pub fn locate(r: usize, c: usize, rows: usize, cols: usize) -> usize {
    locate_in(r, c, rows, cols, RUN)
}

/// [`locate`] for runs `run` long (`cols` a multiple of it).
#[inline(always)]
fn locate_in(r: usize, c: usize, rows: usize, cols: usize, run: usize) -> usize {
    if r >= rows / ROWS * ROWS {
        return r * cols + c; // the tail, row-major
    }
    let (g, i, p, j) = (r / ROWS, r % ROWS, c / run, c % run);
    ((g * (cols / run) + p) * ROWS + i) * run + j
}

/// Where field `(r, c)` of a `(rows, cols)` int4 matrix in row panels is
/// (a field index: word `at / 8`, bits `4 · (at % 8)`): its group's place
/// in the panels, then its nibble in the group's paired bytes.
#[inline(always)]
pub fn int4_locate(r: usize, c: usize, rows: usize, cols: usize) -> usize {
    let group = locate_in(r, c / GROUP, rows, cols / GROUP, 1);
    let t = c % GROUP;
    GROUP * group + 2 * (t % 16) + t / 16
}

/// An int4 matrix's row-major words and scales (`(rows, cols)`, `cols` a
/// multiple of [`GROUP`]) in row panels.
pub fn int4_from_rows(
    words: &[u32],
    scales: &[f32],
    rows: usize,
    cols: usize,
) -> (Vec<u32>, Vec<f32>) {
    let groups = cols / GROUP;
    let mut out = vec![0u32; words.len()];
    let mut out_scales = vec![0.0; scales.len()];
    for r in 0..rows {
        for g in 0..groups {
            let to = locate_in(r, g, rows, groups, 1);
            out_scales[to] = scales[r * groups + g];
            let from = &words[(r * groups + g) * GROUP / 8..][..GROUP / 8];
            out[to * GROUP / 8..][..GROUP / 8].copy_from_slice(&paired(from));
        }
    }
    (out, out_scales)
}

/// A group's four words with byte `t` holding fields `t` and `t + 16`.
fn paired(group: &[u32]) -> [u32; GROUP / 8] {
    let field = |t: usize| (group[t / 8] >> (4 * (t % 8))) & 0xf;
    std::array::from_fn(|w| {
        (0..4).fold(0, |word, b| {
            let t = 4 * w + b;
            word | (field(t) | field(t + 16) << 4) << (8 * b)
        })
    })
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

//! A decode step's rows of an int4 matrix, as the SIMD int4 steps take them
//! (`quant_avx2`, `quant_avx512`, `quant_simd128`). A leaf: those files
//! import it, it imports none of them.

use std::ops::Range;

/// A row's part of an int4 matrix: its words and its groups' scales
/// ([`Matrix::int4_part`](crate::storage::matrix::Matrix::int4_part)), as
/// AVX2's int4 head takes them.
#[cfg(target_arch = "x86_64")]
pub type Row<'a> = (&'a [u32], &'a [f32]);

/// Columns `c` of every row of an int4 matrix, as pointers: row r's words
/// and scales lie a fixed stride after row 0's (`c` whole groups of a
/// matrix of whole groups a row, [`whole_groups`]). One check for the
/// whole matrix (its last row's part lies inside it, so every earlier
/// row's does), where slicing each row cost a call and two bounds checks
/// a row, for each thread's part of the columns (a 768-column matrix on
/// two threads: twelve groups a row), and in wasm a bounds check on each
/// row's words and scale in every group.
///
/// [`whole_groups`]: super::matmul_quant::whole_groups
#[derive(Clone, Copy)]
pub struct Parts {
    words: *const u32,   // row 0's first word of c
    scales: *const f32,  // row 0's first scale of c
    word_stride: usize,  // words a row (cols / 8)
    scale_stride: usize, // scales a row (cols / GROUP)
    // rows that hold what they point at (wasm's `touch` needs it)
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    rows: usize,
    groups: usize, // groups of c (c.len() / GROUP)
}

impl Parts {
    /// Rows `0..rows` of `w` (at least one), columns `c` (whole groups).
    pub fn new(w: &crate::storage::matrix::Matrix, rows: usize, c: Range<usize>) -> Parts {
        let group = crate::storage::format::GROUP;
        assert!(rows > 0 && w.cols.is_multiple_of(group) && c.start.is_multiple_of(group));
        let (words, scales) = w.int4_part(0, c.clone());
        let groups = c.len() / group;
        // Panics unless the last row's part is inside the matrix.
        let _ = w.int4_part(rows - 1, c);
        let (word_stride, scale_stride) = (w.cols / 8, w.cols / group);
        let (words, scales) = (words.as_ptr(), scales.as_ptr());
        Parts { words, scales, word_stride, scale_stride, rows, groups }
    }

    /// Rows `r0..r0 + N`'s words and scales. Rows from the `rows` given to
    /// [`Parts::new`] on point past the matrix: fit for a prefetch only
    /// (which never faults).
    #[inline(always)]
    pub fn at<const N: usize>(&self, r0: usize) -> [(*const u32, *const f32); N] {
        let mut at = [(self.words, self.scales); N];
        for (i, p) in at.iter_mut().enumerate() {
            let r = r0 + i;
            *p = (
                self.words.wrapping_add(r * self.word_stride),
                self.scales.wrapping_add(r * self.scale_stride),
            );
        }
        at
    }

    /// How many groups' words and scales each row holds.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Starts the fetch of row `r`'s word `at` ([`touch`]), where row `r`
    /// is the matrix's: in wasm a touch is a load, which must not leave it.
    /// (x86-64's steps prefetch any address themselves.)
    ///
    /// [`touch`]: super::touch::touch
    #[cfg(target_arch = "wasm32")]
    #[inline(always)]
    pub fn touch(&self, r: usize, at: usize) {
        if r < self.rows {
            let [(words, _)] = self.at::<1>(r);
            let len = self.groups * (crate::storage::format::GROUP / 8);
            // SAFETY: row r < rows holds its groups' words (checked in `new`).
            super::touch::touch(unsafe { std::slice::from_raw_parts(words, len) }, at);
        }
    }
}

//! A [`Matrix`]'s rows read as f32, in every format and layout: borrowed
//! where the values are f32 and row-major, else unpacked a word or an
//! element at a time (the CPU engine's plain loops, the embedding), and an
//! int4 row's words and scales as packed.

use std::ops::Range;

use super::f16_bits::f16_pair_as;
use super::format::{int4_weights, Channels, Format, GROUP};
use super::matrix::Matrix;
use super::pair::{Bf16, Pair};

impl Matrix {
    /// Row `r` as f32: borrowed for f32, else unpacked into `buf` (the CPU
    /// engine's inner loops then run on plain f32 rows in every format).
    // Inlined: the CPU engine's AVX-512 and AVX2 copies must compile it as theirs.
    #[inline(always)]
    pub fn row<'a>(&'a self, r: usize, buf: &'a mut Vec<f32>) -> &'a [f32] {
        self.row_part(r, 0..self.cols, buf)
    }

    /// Columns `c` of row `r` as f32, like [`row`](Self::row) (a thread's
    /// share of a row).
    // Inlined: the CPU engine's AVX-512 and AVX2 copies must compile it as theirs.
    #[inline(always)]
    pub fn row_part<'a>(&'a self, r: usize, c: Range<usize>, buf: &'a mut Vec<f32>) -> &'a [f32] {
        let start = r * self.cols + c.start;
        if let Some(v) = self.as_f32() {
            return &v[start..][..c.len()];
        }
        buf.clear();
        buf.resize(c.len(), 0.0);
        if self.row_panels {
            self.row_panels_part(r, c, buf);
            return buf;
        }
        if !self.unpack_words(r, c.start, buf) {
            self.unpack_elements(r, c.start, buf);
        }
        buf
    }

    /// Row `r` from column `c0` into `buf` a whole word at a time: loops over
    /// slices with no index arithmetic, which the compiler vectorises. Only
    /// for parts that start on a word (and, for int4, a group) boundary and
    /// are whole words long, as every real model's rows are; returns false otherwise.
    // Inlined: the CPU engine's AVX-512 and AVX2 copies must compile it as theirs.
    #[inline(always)]
    fn unpack_words(&self, r: usize, c0: usize, buf: &mut [f32]) -> bool {
        let (start, per) = (r * self.cols + c0, self.format.per_word());
        let group = if self.format == Format::Int4 { GROUP } else { per };
        if self.reordered() || !start.is_multiple_of(group) || !buf.len().is_multiple_of(per) {
            return false;
        }
        let words = &self.words[start / per..][..buf.len() / per];
        match self.format {
            Format::F32 => return false,
            Format::F16 => {
                let scale = self.f16_scale();
                for (o, &word) in buf.chunks_exact_mut(2).zip(words) {
                    (o[0], o[1]) = f16_pair_as::<false>(word, scale);
                }
            }
            Format::Bf16 => {
                for (o, &word) in buf.chunks_exact_mut(2).zip(words) {
                    (o[0], o[1]) = Bf16.pair(word);
                }
            }
            Format::Int8 | Format::Int8PerTensor => {
                // Byte t of a word is its field t (little-endian, as
                // fast::matmul_quant asserts): the fields are the bytes.
                let q: &[i8] = &bytemuck::cast_slice(&self.words)[start..][..buf.len()];
                let scale = |s: f32| move |(o, &q): (&mut f32, &i8)| *o = f32::from(q) * s;
                match (self.format, self.channels) {
                    (Format::Int8PerTensor, _) => {
                        buf.iter_mut().zip(q).for_each(scale(self.scales[0]))
                    }
                    (_, Channels::Rows) => buf.iter_mut().zip(q).for_each(scale(self.scales[r])),
                    (_, Channels::Cols) => {
                        for ((o, &q), &s) in buf.iter_mut().zip(q).zip(&self.scales[c0..]) {
                            *o = f32::from(q) * s;
                        }
                    }
                }
            }
            Format::Int4 => {
                // Word by word: its eight fields are eight lanes, each
                // shifted by its own count (faster than nibbles of bytes).
                let scales = &self.scales[start / GROUP..];
                let groups = buf.chunks_mut(GROUP).zip(words.chunks(GROUP / 8)).zip(scales);
                for ((o, ws), &s) in groups {
                    for (o, &word) in o.chunks_exact_mut(8).zip(ws) {
                        o.copy_from_slice(&int4_weights(word, s));
                    }
                }
            }
        }
        true
    }

    /// Row `r` from column `c0` into `buf` element by element (any alignment).
    fn unpack_elements(&self, r: usize, c0: usize, buf: &mut [f32]) {
        let start = r * self.cols + c0;
        let ch = |c: usize| if self.channels == Channels::Rows { r } else { c0 + c };
        for (c, o) in buf.iter_mut().enumerate() {
            *o = match self.lifted || self.reordered() {
                true => self.get(start + c),
                false => self.format.load(&self.words, &self.scales, start + c, ch(c)),
            };
        }
    }

    /// Columns `c` of row `r` of an int4 matrix as packed: its words (eight
    /// columns each) and its groups' scales. `c` starts on a group and is
    /// whole groups long (the quantised decode paths check it).
    // Inlined: the CPU engine's AVX-512 copies must compile it as theirs.
    #[inline(always)]
    pub fn int4_part(&self, r: usize, c: Range<usize>) -> (&[u32], &[f32]) {
        let at = r * self.cols + c.start;
        (&self.words[at / 8..][..c.len() / 8], &self.scales[at / GROUP..][..c.len() / GROUP])
    }
}

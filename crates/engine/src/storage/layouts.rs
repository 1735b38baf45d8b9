//! The methods of [`Matrix`] that lay its words out for the CPU engine's
//! loops, or read them so laid out: cutting column panels into parts, and
//! the layouts for 8-bit activations ([`quads`](super::quads)), an f32
//! head's row panels ([`row_panels`](super::row_panels)). Apart from
//! `matrix.rs`, which imports the layouts' rules, so that no module imports
//! one that imports it back.

use std::ops::Range;

use super::format::{Channels, Format, GROUP};
use super::matrix::Matrix;
use super::panels::PANEL;
use super::quads::{from_rows, head_octs_from_rows, head_quads_from_rows, locate, locate_oct};
use super::quads::{octs_from_rows, Dot8};
use super::row_panels::{self, ROWS, RUN};

/// Whether an int8 matrix has one scale per output along `outputs`, so its
/// integer sums can be scaled once per output: int8 with its channels
/// there, or int8-tensor.
pub fn one_scale_an_output(w: &Matrix, outputs: Channels) -> bool {
    match w.format {
        Format::Int8 => w.channels == outputs,
        Format::Int8PerTensor => true,
        _ => false,
    }
}

/// Panels `panels` of `v`, which holds `all` panels one after another, each
/// one run of the same length (a panel-major layout's words or scales).
fn whole_panels<T: Copy>(v: &[T], panels: &Range<usize>, all: usize) -> Vec<T> {
    let per = v.len() / all;
    v[panels.start * per..panels.end * per].to_vec()
}

impl Matrix {
    /// The step columns can be cut out of this matrix at
    /// ([`columns`](Self::columns)): whole panels (column panels, quad or
    /// oct panels), whole int4 groups of a row, or whole words of a row
    /// (f32, f16 and bf16 of even width, int8 of a width of whole words).
    /// `None` for an LM head laid out for 8-bit activations or in row panels,
    /// whose outputs are its rows ([`shard`](Self::shard) cuts those), and for a row-major width
    /// that does not start every row on a word (or an int4 group).
    pub fn column_step(&self) -> Option<usize> {
        match self.int8_activations {
            Some(Dot8::Rows) => return None,
            Some(Dot8::Quads | Dot8::Octs) => return Some(PANEL),
            None if self.panels => return Some(PANEL),
            None if self.row_panels => return None,
            None => {}
        }
        let step = match self.format {
            Format::Int4 => GROUP,
            f => f.per_word(),
        };
        self.cols.is_multiple_of(step).then_some(step)
    }

    /// Whether whole panels of columns are one run of words (column panels,
    /// or panels for 8-bit activations: the CPU layout's block matrices), so
    /// a product's part streams from the matrix itself as fast as from a
    /// copy ([`columns`](Self::columns) of it).
    pub fn panel_major(&self) -> bool {
        self.panels || matches!(self.int8_activations, Some(Dot8::Quads | Dot8::Octs))
    }

    /// Columns `c` as a matrix of their own, the same words and scales
    /// copied, not repacked (a coworker's part of a matmul: each output is
    /// computed from the same bits as before); `None` unless
    /// [`column_step`](Self::column_step) divides both ends of `c`.
    pub fn columns(&self, c: Range<usize>) -> Option<Matrix> {
        self.column_step().filter(|&s| c.start.is_multiple_of(s) && c.end.is_multiple_of(s))?;
        let (k, n) = (self.rows, self.cols);
        let (words, scales) = match self.reordered() {
            // Panel-major layouts: whole panels are one run of words (and of
            // an int4 matrix's scales by panel).
            true => {
                let (panels, all) = (c.start / PANEL..c.end / PANEL, n / PANEL);
                let scales = match self.int8_activations {
                    Some(Dot8::Octs) => whole_panels(&self.scales, &panels, all),
                    _ => self.column_scales(&c),
                };
                (whole_panels(&self.words, &panels, all), scales)
            }
            false => {
                let per = self.format.per_word();
                let row = |r: usize| &self.words[(r * n + c.start) / per..][..c.len() / per];
                let words = (0..k).flat_map(row).copied().collect();
                let scales = match self.format {
                    // Each row's groups of 32 columns.
                    Format::Int4 => (0..k)
                        .flat_map(|r| &self.scales[(r * n + c.start) / GROUP..][..c.len() / GROUP])
                        .copied()
                        .collect(),
                    _ => self.column_scales(&c),
                };
                (words, scales)
            }
        };
        Some(Matrix { words, scales, cols: c.len(), ..*self })
    }

    /// The scales of columns `c` of an f32, f16, bf16 or int8 matrix: its
    /// per-column scales' slice, or all of them (per tensor, per row, none).
    fn column_scales(&self, c: &Range<usize>) -> Vec<f32> {
        match (self.format, self.channels) {
            (Format::Int8, Channels::Cols) => self.scales[c.clone()].to_vec(),
            _ => self.scales.clone(),
        }
    }

    /// Rows `r0..r1` (`r0` on a panel) of an LM head laid out for 8-bit
    /// activations: its panels are panels of rows, each one run of words
    /// and (int4) of scales; an int8 head's scales are per row or one.
    pub(super) fn head_rows(&self, r0: usize, r1: usize) -> Matrix {
        let (panels, all) = (r0 / PANEL..r1.div_ceil(PANEL), self.rows.div_ceil(PANEL));
        let scales = match (self.format, self.channels) {
            (Format::Int4, _) => whole_panels(&self.scales, &panels, all),
            (Format::Int8, Channels::Rows) => self.scales[r0..r1].to_vec(),
            _ => self.scales.clone(),
        };
        let words = whole_panels(&self.words, &panels, all);
        Matrix { words, scales, rows: r1 - r0, ..*self }
    }

    /// Has the CPU engine multiply this int8 or int4 matrix by 8-bit activations
    /// ([`fast::int8_dot`](crate::fast::int8_dot)), its words laid out for
    /// `dot`: other results than the f32 path's, so the GPU engine refuses
    /// it. The values held are the same ([`get`](Matrix::get)). False
    /// (nothing changed) unless the matrix is int8 with one scale per
    /// output (its columns for [`Dot8::Quads`], its rows for [`Dot8::Rows`])
    /// or int4 ([`Dot8::Octs`]), row-major, at least one row and, for quads
    /// and octs, whole panels wide.
    pub fn use_int8_activations(&mut self, dot: Dot8) -> bool {
        let takes = match dot {
            Dot8::Quads => one_scale_an_output(self, Channels::Cols),
            Dot8::Octs => self.format == Format::Int4,
            // int4: its groups along the rows, as Q4_0's.
            Dot8::Rows => {
                let int4 = self.format == Format::Int4 && self.cols.is_multiple_of(GROUP);
                int4 || one_scale_an_output(self, Channels::Rows)
            }
        };
        let whole = dot == Dot8::Rows || self.cols.is_multiple_of(PANEL);
        let row_major = !self.panels && self.int8_activations.is_none();
        if !takes || !row_major || self.rows == 0 || !whole {
            return false;
        }
        match dot {
            Dot8::Rows if self.format != Format::Int4 => {
                let bytes = bytemuck::cast_slice(&self.words);
                self.words = head_quads_from_rows(bytes, self.rows, self.cols)
            }
            Dot8::Quads => {
                self.words = from_rows(bytemuck::cast_slice(&self.words), self.rows, self.cols)
            }
            Dot8::Octs => {
                (self.words, self.scales) =
                    octs_from_rows(&self.words, &self.scales, self.rows, self.cols)
            }
            Dot8::Rows => {
                (self.words, self.scales) =
                    head_octs_from_rows(&self.words, &self.scales, self.rows, self.cols)
            }
        }
        self.int8_activations = Some(dot);
        true
    }

    /// How this matrix multiplies 8-bit activations, if it does.
    pub fn int8_activations(&self) -> Option<Dot8> {
        self.int8_activations
    }

    /// The words in quad panels (`None` unless [`Dot8::Quads`]).
    pub fn int8_quads(&self) -> Option<&[u32]> {
        (self.int8_activations == Some(Dot8::Quads)).then_some(&self.words)
    }

    /// The words of an int8 head in head quad panels (`None` unless
    /// [`Dot8::Rows`] on int8).
    pub fn int8_head_quads(&self) -> Option<&[u32]> {
        let int8 = self.format != Format::Int4;
        (self.int8_activations == Some(Dot8::Rows) && int8).then_some(&self.words)
    }

    /// The words of an int4 head in head oct panels and its scales by panel
    /// (`None` unless [`Dot8::Rows`] on int4).
    pub fn int4_head_octs(&self) -> Option<(&[u32], &[f32])> {
        let int4 = self.format == Format::Int4;
        (self.int8_activations == Some(Dot8::Rows) && int4).then_some((&self.words, &self.scales))
    }

    /// The words in oct panels and the scales by panel (`None` unless [`Dot8::Octs`]).
    pub fn int4_octs(&self) -> Option<(&[u32], &[f32])> {
        (self.int8_activations == Some(Dot8::Octs)).then_some((&self.words, &self.scales))
    }

    /// Element `i` (row-major) of a matrix in quad panels: its byte times
    /// its column's scale, as [`Format::load`].
    pub(super) fn quads_get(&self, i: usize) -> f32 {
        let (r, c) = (i / self.cols, i % self.cols);
        if self.int8_activations == Some(Dot8::Rows) && self.format == Format::Int4 {
            // An int4 head in head octs: (r, c) is (c, r) of oct panels of its transpose.
            let (word, bit) = locate_oct(c, r, self.cols);
            let q = ((self.words[word] >> bit) & 0xf) as i32 - 8;
            let groups = self.cols / GROUP;
            return q as f32 * self.scales[(r / PANEL * groups + c / GROUP) * PANEL + r % PANEL];
        }
        if self.int8_activations == Some(Dot8::Rows) {
            // An int8 head in head quads: (r, c) is (c, r) of quad panels of its transpose.
            let (word, t) = locate(c, r, self.cols);
            let q = (self.words[word] >> (8 * t)) as u8 as i8;
            return f32::from(q) * self.scales()[if self.format == Format::Int8 { r } else { 0 }];
        }
        if self.int8_activations == Some(Dot8::Octs) {
            let (word, bit) = locate_oct(r, c, self.rows);
            let q = ((self.words[word] >> bit) & 0xf) as i32 - 8;
            return q as f32 * self.scales[c / PANEL * self.rows + r];
        }
        let (word, t) = locate(r, c, self.rows);
        let q = (self.words[word] >> (8 * t)) as u8 as i8;
        f32::from(q) * self.scales()[if self.format == Format::Int8 { c } else { 0 }]
    }
}

impl Matrix {
    /// Lays an f32, int8 or int4 LM head's (or tied embedding's) values out in row
    /// panels ([`row_panels`](super::row_panels)): the CPU engine's decode
    /// step then reads it as one stream. The values are the same
    /// ([`get`](Matrix::get), [`row`](Matrix::row)), the scales untouched
    /// (an int4 matrix's in the panels' order of its groups);
    /// the GPU, which reads row-major words, refuses it. False (nothing
    /// changed) unless the matrix is f32, int8, int8-tensor or int4, row-major, at
    /// least one panel of rows, and whole runs (int4: groups) wide.
    pub fn into_row_panels(&mut self) -> bool {
        let run = if self.format == Format::Int4 { GROUP } else { RUN };
        let whole = self.rows >= ROWS && self.cols > 0 && self.cols.is_multiple_of(run);
        let (rows, cols) = (self.rows, self.cols);
        if self.reordered() || !whole {
            return false;
        }
        self.words = match self.format {
            Format::Int4 => {
                let words;
                (words, self.scales) =
                    row_panels::int4_from_rows(&self.words, &self.scales, rows, cols);
                words
            }
            Format::F32 => row_panels::from_rows(&self.words, rows, cols),
            Format::Int8 | Format::Int8PerTensor => {
                let bytes =
                    row_panels::from_rows(bytemuck::cast_slice::<_, u8>(&self.words), rows, cols);
                bytes
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            }
            _ => return false,
        };
        self.row_panels = true;
        true
    }

    /// The values of an f32 matrix in row panels (`None` otherwise).
    pub fn f32_row_panels(&self) -> Option<&[f32]> {
        let f32 = self.row_panels && self.format == Format::F32;
        f32.then(|| bytemuck::cast_slice(&self.words))
    }

    /// The fields of an int8 or int8-tensor matrix in row panels, one byte
    /// each (`None` otherwise); each weight is its field times its scale
    /// ([`Format::load`]).
    pub fn int8_row_panels(&self) -> Option<&[i8]> {
        let int8 = matches!(self.format, Format::Int8 | Format::Int8PerTensor);
        (self.row_panels && int8).then(|| bytemuck::cast_slice(&self.words))
    }

    /// The words of an int4 matrix in row panels and its scales in their
    /// order (`None` otherwise).
    pub fn int4_row_panels(&self) -> Option<(&[u32], &[f32])> {
        let int4 = self.row_panels && self.format == Format::Int4;
        int4.then_some((&self.words, &self.scales))
    }

    /// Where element `(r, c)` of a matrix in row panels is, as `Format::load`
    /// reads it.
    pub(super) fn row_panels_at(&self, r: usize, c: usize) -> usize {
        match self.format {
            Format::Int4 => row_panels::int4_locate(r, c, self.rows, self.cols),
            _ => row_panels::locate(r, c, self.rows, self.cols),
        }
    }

    /// Columns `c` of row `r` of a matrix in row panels, gathered run by run
    /// into `buf` (`c.len()` long): each run's part is contiguous.
    pub(super) fn row_panels_part(&self, r: usize, c: Range<usize>, buf: &mut [f32]) {
        if self.format == Format::Int4 {
            // A field at a time (a row of the embedding, or a head's row
            // outside a decode step): each as `Format::load` reads it.
            for (o, col) in buf.iter_mut().zip(c) {
                *o = self.format.load(&self.words, &self.scales, self.row_panels_at(r, col), 0);
            }
            return;
        }
        let mut col = c.start;
        while col < c.end {
            let n = (RUN - col % RUN).min(c.end - col);
            let at = row_panels::locate(r, col, self.rows, self.cols);
            let out = &mut buf[col - c.start..][..n];
            match self.f32_row_panels() {
                Some(values) => out.copy_from_slice(&values[at..][..n]),
                None => {
                    // int8 (the other format laid out so): field · scale, as Format::load.
                    let q: &[i8] = bytemuck::cast_slice(&self.words);
                    for (k, (o, &q)) in out.iter_mut().zip(&q[at..]).enumerate() {
                        let ch = match self.channels {
                            Channels::Rows => r,
                            Channels::Cols => col + k,
                        };
                        let s = self.scales[if self.format == Format::Int8 { ch } else { 0 }];
                        *o = f32::from(q) * s;
                    }
                }
            }
            col += n;
        }
    }

    /// Rows `r0..r1` of a matrix in row panels (`r0` on a panel, `r1` on one
    /// or the last row): a slice of its values, the same layout.
    pub(super) fn row_panels_rows(&self, r0: usize, r1: usize) -> Matrix {
        assert!(r0.is_multiple_of(ROWS) && (r1.is_multiple_of(ROWS) || r1 == self.rows));
        let per = self.format.per_word(); // whole runs wide: every row starts on a word
        let words = self.words[r0 * self.cols / per..r1 * self.cols / per].to_vec();
        let scales = match (self.format, self.channels) {
            (Format::Int8, Channels::Rows) => self.scales[r0..r1].to_vec(),
            // A group's scale lies where its fields do, a group a scale.
            (Format::Int4, _) => {
                self.scales[r0 * self.cols / GROUP..r1 * self.cols / GROUP].to_vec()
            }
            _ => self.scales.clone(),
        };
        Matrix { words, scales, rows: r1 - r0, ..*self }
    }
}

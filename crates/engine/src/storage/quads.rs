//! The CPU engine's layout for an int8 matrix that multiplies 8-bit
//! activations (`--activations int8`, [`fast::int8_dot`](crate::fast::int8_dot)):
//! quad panels. An integer dot product instruction (AVX2's `vpmaddubsw` and
//! `vpmaddwd`) multiplies four bytes of a lane by four bytes and adds them,
//! so each 32-bit word holds four consecutive rows of one column, and a
//! panel's [`PANEL`] columns of a quad of rows are one run of 128 bytes
//! (four AVX2 registers) read as one stream, the next quad right after.
//!
//! Layout of a `(k, n)` matrix's words (`n` a multiple of [`PANEL`]):
//! `(n / PANEL, ⌈k / 4⌉, PANEL)`: panel `p`, quad `r4`, word `j` holds
//! column `PANEL · p + j` of rows `4 · r4 + t` in its bytes `t` (rows past
//! `k`: zeros).
//!
//! An int4 matrix's are oct panels: `(n / PANEL, ⌈k / 8⌉, PANEL)` words,
//! byte `t` of word `(p, o, j)` holding rows `8o + t` (low nibble) and
//! `8o + 4 + t` (high nibble) of column `PANEL · p + j`, each field plus 8
//! (0..=15: `vpmaddubsw` takes them as unsigned bytes once masked out; rows
//! past `k`: 8, a zero field), and its scales by panel: `(n / PANEL, k)`,
//! the scale of row `r`'s group in panel `p` (a panel is one group).

use super::format::{nibble, Channels, Format, GROUP};
use super::matrix::Matrix;
use super::panels::PANEL;

/// Rows of a column in one word.
pub const QUAD: usize = 4;

/// Rows of a column in one word of an int4 matrix's oct panels.
pub const OCT: usize = 8;
const _: () = assert!(PANEL == GROUP, "a panel of an int4 matrix's row is one group");

/// How a matrix is multiplied by 8-bit activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dot8 {
    /// int8 words in quad panels; its outputs are its columns (the blocks' matrices).
    Quads,
    /// int4 words in oct panels, the scales by panel; its outputs are its columns.
    Octs,
    /// Its outputs are its rows, each a dot product along a row (the LM
    /// head): int8 (a scale per row or one) in head quad panels, its rows
    /// taken as the columns of quad panels ([`head_quads_from_rows`]); int4
    /// row-major, its groups of 32 then along the dot as Q4_0's.
    Rows,
}

/// The quad panels of a row-major `(k, n)` int8 matrix's bytes.
pub fn from_rows(bytes: &[i8], k: usize, n: usize) -> Vec<u32> {
    let quads = k.div_ceil(QUAD);
    let mut words = Vec::with_capacity(n / PANEL * quads * PANEL); // (n / PANEL, quads, PANEL)
    for p in 0..n / PANEL {
        for r4 in 0..quads {
            for j in PANEL * p..PANEL * (p + 1) {
                let byte = |t: usize| {
                    let r = QUAD * r4 + t;
                    if r < k {
                        bytes[r * n + j] as u8
                    } else {
                        0
                    }
                };
                words.push(u32::from_le_bytes(std::array::from_fn(byte)));
            }
        }
    }
    words
}

/// The oct panels of a row-major `(k, n)` int4 matrix (words and scales).
pub fn octs_from_rows(words: &[u32], scales: &[f32], k: usize, n: usize) -> (Vec<u32>, Vec<f32>) {
    let field = |r: usize, j: usize| match r < k {
        true => (nibble(words[(r * n + j) / 8], (r * n + j) % 8) + 8) as u32,
        false => 8,
    };
    let octs = k.div_ceil(OCT);
    let mut out = Vec::with_capacity(n / PANEL * octs * PANEL); // (n / PANEL, octs, PANEL)
    let mut by_panel = Vec::with_capacity(k * n / PANEL); // (n / PANEL, k)
    for p in 0..n / PANEL {
        for o in 0..octs {
            for j in PANEL * p..PANEL * (p + 1) {
                let byte = |t: usize| field(OCT * o + t, j) | field(OCT * o + 4 + t, j) << 4;
                out.push((0..4).fold(0, |w, t| w | byte(t) << (8 * t)));
            }
        }
        by_panel.extend((0..k).map(|r| scales[(r * n + PANEL * p) / GROUP]));
    }
    (out, by_panel)
}

/// Where element `(r, c)` of a `(k, n)` int4 matrix in oct panels is: its
/// word and the bit its nibble starts at.
pub fn locate_oct(r: usize, c: usize, k: usize) -> (usize, usize) {
    let (p, j, t) = (c / PANEL, c % PANEL, r % OCT);
    ((p * k.div_ceil(OCT) + r / OCT) * PANEL + j, 8 * (t % 4) + 4 * (t / 4))
}

/// The quad panels of a row-major `(rows, cols)` int8 head's transpose:
/// `(⌈rows / PANEL⌉, ⌈cols / 4⌉, PANEL)` words, byte `t` of word `(p, q,
/// j)` element `(PANEL · p + j, 4q + t)` (zeros past either end), so that
/// 32 rows' logits take the matmul's panel loop.
pub fn head_quads_from_rows(bytes: &[i8], rows: usize, cols: usize) -> Vec<u32> {
    let (panels, quads) = (rows.div_ceil(PANEL), cols.div_ceil(QUAD));
    let mut words = Vec::with_capacity(panels * quads * PANEL);
    for p in 0..panels {
        for q in 0..quads {
            for v in PANEL * p..PANEL * (p + 1) {
                let byte = |t: usize| {
                    let c = QUAD * q + t;
                    if v < rows && c < cols {
                        bytes[v * cols + c] as u8
                    } else {
                        0
                    }
                };
                words.push(u32::from_le_bytes(std::array::from_fn(byte)));
            }
        }
    }
    words
}

/// Where element `(r, c)` of a `(k, n)` matrix in quad panels is: its word
/// and its byte.
pub fn locate(r: usize, c: usize, k: usize) -> (usize, usize) {
    let (p, j) = (c / PANEL, c % PANEL);
    ((p * k.div_ceil(QUAD) + r / QUAD) * PANEL + j, r % QUAD)
}

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

impl Matrix {
    /// Has the CPU engine multiply this int8 matrix by 8-bit activations
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
            Dot8::Rows => {}
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

    /// The words in oct panels and the scales by panel (`None` unless [`Dot8::Octs`]).
    pub fn int4_octs(&self) -> Option<(&[u32], &[f32])> {
        (self.int8_activations == Some(Dot8::Octs)).then_some((&self.words, &self.scales))
    }

    /// Element `i` (row-major) of a matrix in quad panels: its byte times
    /// its column's scale, as [`Format::load`].
    pub(super) fn quads_get(&self, i: usize) -> f32 {
        let (r, c) = (i / self.cols, i % self.cols);
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

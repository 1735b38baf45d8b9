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

use super::format::{nibble, GROUP};
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
    /// head), its rows taken as the columns of panels: int8 (a scale per
    /// row or one) in head quad panels ([`head_quads_from_rows`]); int4 in
    /// head oct panels, its groups of 32 along the dot as Q4_0's
    /// ([`head_octs_from_rows`]).
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

/// The oct panels of a row-major `(rows, cols)` int4 head's transpose
/// (`cols` whole groups): `(⌈rows / PANEL⌉, cols / 8, PANEL)` words, byte
/// `t` of word `(p, o, j)` holding columns `8o + t` (low nibble) and
/// `8o + 4 + t` (high) of row `PANEL · p + j`, plus 8 (rows past the end:
/// 8, a zero field); and the scales `(⌈rows / PANEL⌉, cols / GROUP,
/// PANEL)`, `s(v, b)` of row `v`'s group `b` (0 past the end). 32 rows'
/// logits then take the int4 panel loop, each lane with its own scale.
pub fn head_octs_from_rows(
    words: &[u32],
    scales: &[f32],
    rows: usize,
    cols: usize,
) -> (Vec<u32>, Vec<f32>) {
    let field = |v: usize, c: usize| match v < rows {
        true => (nibble(words[(v * cols + c) / 8], (v * cols + c) % 8) + 8) as u32,
        false => 8,
    };
    let (panels, groups) = (rows.div_ceil(PANEL), cols / GROUP);
    let mut out = Vec::with_capacity(panels * cols / OCT * PANEL); // (panels, cols / 8, PANEL)
    let mut by_panel = Vec::with_capacity(panels * groups * PANEL); // (panels, groups, PANEL)
    for p in 0..panels {
        for o in 0..cols / OCT {
            for v in PANEL * p..PANEL * (p + 1) {
                let byte = |t: usize| field(v, OCT * o + t) | field(v, OCT * o + 4 + t) << 4;
                out.push((0..4).fold(0, |w, t| w | byte(t) << (8 * t)));
            }
        }
        for b in 0..groups {
            let s = |v: usize| if v < rows { scales[v * groups + b] } else { 0.0 };
            by_panel.extend((PANEL * p..PANEL * (p + 1)).map(s));
        }
    }
    (out, by_panel)
}

/// Where element `(r, c)` of a `(k, n)` matrix in quad panels is: its word
/// and its byte.
pub fn locate(r: usize, c: usize, k: usize) -> (usize, usize) {
    let (p, j) = (c / PANEL, c % PANEL);
    ((p * k.div_ceil(QUAD) + r / QUAD) * PANEL + j, r % QUAD)
}

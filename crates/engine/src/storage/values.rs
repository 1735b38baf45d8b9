//! A matrix's values as packing reads them: f32 values already held, or a
//! checkpoint's stored words (little-endian f32, f16 or bf16) widened to f32
//! a piece at a time, so that packing a stored matrix never holds all of it
//! as f32 (a 124M checkpoint's embedding is 154 MB of f32); or values
//! gathered from several stored matrices (a Llama block's, transposed).

use std::borrow::Cow;
use std::ops::Range;

use super::pieces::{in_parts, in_pieces, PIECE};

/// Values packing reads a piece at a time ([`Format::pack`](super::format::Format::pack)).
pub trait Values: Sync {
    /// How many values there are.
    fn count(&self) -> usize;

    /// The values in `range` into `out` (`range.len()` long), as f32.
    fn fill(&self, range: Range<usize>, out: &mut [f32]);

    /// `f` of the values in `range`: filled into a piece's own buffer
    /// (values already f32 lend their own).
    fn with<R>(&self, range: Range<usize>, f: impl FnOnce(&[f32]) -> R) -> R {
        let mut values = vec![0.0; range.len()];
        self.fill(range, &mut values);
        f(&values)
    }

    /// Every value as f32, in pieces (natively on every core).
    fn to_f32(&self) -> Vec<f32> {
        in_pieces(self.count(), 1, |piece, out| self.fill(piece, out))
    }
}

impl Values for [f32] {
    fn count(&self) -> usize {
        self.len()
    }

    fn fill(&self, range: Range<usize>, out: &mut [f32]) {
        out.copy_from_slice(&self[range]);
    }

    fn with<R>(&self, range: Range<usize>, f: impl FnOnce(&[f32]) -> R) -> R {
        f(&self[range])
    }
}

/// How a checkpoint stores each value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    F32,
    F16,
    Bf16,
}

impl Stored {
    /// Bytes a value.
    pub fn size(self) -> usize {
        match self {
            Stored::F32 => 4,
            Stored::F16 | Stored::Bf16 => 2,
        }
    }

    /// Whether any of the values stored in `bytes` is not finite: every
    /// exponent bit set, in their little-endian bits.
    fn any_non_finite(self, bytes: &[u8]) -> bool {
        match self {
            Stored::F32 => {
                let bits = bytes.as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b));
                bits.fold(false, |any, v| any | (v & 0x7f80_0000 == 0x7f80_0000))
            }
            Stored::F16 => {
                let bits = bytes.as_chunks::<2>().0.iter().map(|b| u16::from_le_bytes(*b));
                bits.fold(false, |any, v| any | (v & 0x7c00 == 0x7c00))
            }
            Stored::Bf16 => {
                let bits = bytes.as_chunks::<2>().0.iter().map(|b| u16::from_le_bytes(*b));
                bits.fold(false, |any, v| any | (v & 0x7f80 == 0x7f80))
            }
        }
    }

    /// The value of its little-endian bytes `b`.
    fn value(self, b: &[u8]) -> f32 {
        match self {
            Stored::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Stored::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
            Stored::Bf16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        }
    }
}

/// A checkpoint's stored values: `data` holds `data.len() / stored.size()`
/// of them. The data may be unaligned, hence bytes; borrowed from a file in
/// memory, or read from one that is not.
#[derive(Clone)]
pub struct StoredValues<'a> {
    pub stored: Stored,
    pub data: Cow<'a, [u8]>,
}

impl StoredValues<'_> {
    /// The first value that is not finite (NaN or infinite), and where: read
    /// from the bits, without widening (every exponent bit set).
    /// Each piece is scanned whole without a branch (a loop the compiler
    /// vectorises), natively on every core; only a piece that has one is
    /// searched value by value.
    pub fn first_non_finite(&self) -> Option<(usize, f32)> {
        let size = self.stored.size();
        let bytes = |piece: usize| {
            let from = piece * PIECE * size; // a piece that exists: within the data
            &self.data[from..(from + PIECE * size).min(self.data.len())]
        };
        let has = in_parts(self.count().div_ceil(PIECE), 1, |piece, out| {
            out[0] = self.stored.any_non_finite(bytes(piece));
        });
        let piece = has.iter().position(|&h| h)?;
        let at = bytes(piece).chunks_exact(size).position(|b| self.stored.any_non_finite(b))?;
        let index = piece * PIECE + at;
        Some((index, self.stored.value(&self.data[index * size..])))
    }
}

impl Values for StoredValues<'_> {
    fn count(&self) -> usize {
        self.data.len() / self.stored.size()
    }

    /// One loop per way of storing (the choice made once, not a value at a
    /// time: loading spends its time here).
    fn fill(&self, range: Range<usize>, out: &mut [f32]) {
        let size = self.stored.size();
        let bytes = &self.data[range.start * size..range.end * size];
        match self.stored {
            Stored::F32 => widen(out, bytes, f32::from_le_bytes),
            Stored::F16 => widen(out, bytes, |b| half::f16::from_le_bytes(b).to_f32()),
            Stored::Bf16 => widen(out, bytes, |b| half::bf16::from_le_bytes(b).to_f32()),
        }
    }
}

/// `bytes` as values of `N` little-endian bytes each, into `out`.
#[inline(always)]
fn widen<const N: usize>(out: &mut [f32], bytes: &[u8], value: impl Fn([u8; N]) -> f32) {
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(N)) {
        *o = value(b.try_into().expect("N bytes"));
    }
}

/// An `[inp, columns.len()]` matrix whose column `c` is row `columns[c].1`
/// of the stored `[_, inp]` matrix `parts[columns[c].0]`: a checkpoint's
/// `nn.Linear` weights (`[out, in]`) transposed and side by side, their rows
/// in any order, read a piece at a time (no f32 copy of any of them).
pub struct Gathered<'a> {
    pub parts: Vec<StoredValues<'a>>,
    pub inp: usize,
    pub columns: Vec<(usize, usize)>,
}

impl Values for Gathered<'_> {
    fn count(&self) -> usize {
        self.inp * self.columns.len()
    }

    /// Column by column: each column's rows in the piece are one run of its
    /// stored row, widened together, then spread a row apart (the piece is
    /// a few hundred KiB: in cache), where value by value each read would
    /// land on another stored row.
    fn fill(&self, range: Range<usize>, out: &mut [f32]) {
        let width = self.columns.len();
        let rows = range.start / width..range.end.div_ceil(width);
        let mut run = vec![0.0; rows.len()];
        for (c, &(part, row)) in self.columns.iter().enumerate() {
            let at = row * self.inp;
            self.parts[part].fill(at + rows.start..at + rows.end, &mut run);
            for (r, &v) in rows.clone().zip(&run) {
                let i = r * width + c;
                if range.contains(&i) {
                    out[i - range.start] = v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{Channels, Format};
    use super::super::pieces::PIECE;
    use super::*;

    /// Packing a checkpoint's stored values, widened a piece at a time, gives
    /// the words and scales of packing them widened whole: every format,
    /// both channel axes, each way of storing, over three pieces and a
    /// ragged tail (and at an awkward small size).
    #[test]
    fn stored_values_pack_as_widened() {
        for (rows, cols) in [(3 * PIECE / 63 + 5, 63), (1, 1757)] {
            let w: Vec<f32> = (0..rows * cols)
                .map(|i| (((i * 7919) % 1013) as f32 / 506.0 - 1.0) * (1 + i / cols % 11) as f32)
                .collect();
            for stored in [Stored::F32, Stored::F16, Stored::Bf16] {
                let data: Vec<u8> = match stored {
                    Stored::F32 => w.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    Stored::F16 => {
                        w.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect()
                    }
                    Stored::Bf16 => {
                        w.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect()
                    }
                };
                let values = StoredValues { stored, data: (&data[..]).into() };
                let widened = values.to_f32();
                let rounded = |v: f32| match stored {
                    Stored::F32 => v,
                    Stored::F16 => half::f16::from_f32(v).to_f32(),
                    Stored::Bf16 => half::bf16::from_f32(v).to_f32(),
                };
                assert!(widened.iter().copied().eq(w.iter().map(|&v| rounded(v))), "{stored:?}");
                for format in Format::ALL {
                    for channels in [Channels::Rows, Channels::Cols] {
                        let whole = format.pack(&widened[..], cols, channels);
                        let got = format.pack(&values, cols, channels);
                        assert!(got == whole, "{stored:?} {format:?} {channels:?} {rows}×{cols}");
                    }
                }
            }
        }
    }

    /// A gathered matrix holds each part's rows as its columns, in the order
    /// `columns` gives, over several pieces (65 × 2 · 1009 values).
    #[test]
    fn gathered_columns_are_the_parts_rows() {
        let (inp, rows) = (65, 1009);
        let value = |part: usize, i: usize| (part * 100_000 + i) as f32; // exact in f32
        let data: Vec<Vec<u8>> = (0..2)
            .map(|p| (0..rows * inp).flat_map(|i| value(p, i).to_le_bytes()).collect())
            .collect();
        let parts =
            data.iter().map(|d| StoredValues { stored: Stored::F32, data: d[..].into() }).collect();
        let columns: Vec<_> = (0..rows).flat_map(|j| [(1, rows - 1 - j), (0, j)]).collect();
        let gathered = Gathered { parts, inp, columns: columns.clone() };
        let got = gathered.to_f32();
        assert!(got.len() > 2 * PIECE);
        for (i, v) in got.into_iter().enumerate() {
            let (r, (part, row)) = (i / columns.len(), columns[i % columns.len()]);
            assert_eq!(v, value(part, row * inp + r), "element {i}");
        }
    }

    /// The bit test agrees with widening and `is_finite` on every f16 and
    /// bf16 pattern, and on f32's edges.
    #[test]
    fn non_finite_bits_agree_with_widening() {
        for stored in [Stored::F16, Stored::Bf16] {
            for bits in 0..=u16::MAX {
                let data = bits.to_le_bytes();
                let values = StoredValues { stored, data: (&data[..]).into() };
                let widened = stored.value(&data);
                assert_eq!(values.first_non_finite().is_some(), !widened.is_finite(), "{bits:#x}");
            }
        }
        let edges = [0.0, -0.0, f32::MAX, f32::MIN, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        for v in edges.into_iter().chain([f32::from_bits(0x7f80_0001), f32::from_bits(0xff7f_ffff)])
        {
            let data = v.to_le_bytes();
            let values = StoredValues { stored: Stored::F32, data: (&data[..]).into() };
            assert_eq!(values.first_non_finite().is_some(), !v.is_finite(), "{v}");
        }
    }

    /// Over several pieces and a ragged tail: the first of two non-finite
    /// values is found where it is, whichever piece holds it.
    #[test]
    fn the_first_non_finite_value_is_found_in_any_piece() {
        let n = 2 * PIECE + 1757;
        for stored in [Stored::F32, Stored::F16, Stored::Bf16] {
            let finite = vec![0.5f32; n];
            let at = |i: usize, v: f32| {
                let mut values = finite.clone();
                values[i] = v;
                values.iter().flat_map(|&v| stored_bytes(stored, v)).collect::<Vec<u8>>()
            };
            let data = at(0, 1.0);
            assert_eq!(StoredValues { stored, data: data.into() }.first_non_finite(), None);
            for first in [0, PIECE - 1, PIECE, 2 * PIECE + 3, n - 1] {
                let mut data = at(first, f32::INFINITY);
                // a second one later in the same or the next piece
                if first + 5 < n {
                    let later = stored_bytes(stored, f32::NEG_INFINITY);
                    let size = later.len();
                    data[(first + 5) * size..(first + 6) * size].copy_from_slice(&later);
                }
                let found = StoredValues { stored, data: data.into() }.first_non_finite();
                assert_eq!(found, Some((first, f32::INFINITY)), "{stored:?} at {first}");
            }
        }
    }

    /// `v` as `stored` stores it, little-endian.
    fn stored_bytes(stored: Stored, v: f32) -> Vec<u8> {
        match stored {
            Stored::F32 => v.to_le_bytes().to_vec(),
            Stored::F16 => half::f16::from_f32(v).to_le_bytes().to_vec(),
            Stored::Bf16 => half::bf16::from_f32(v).to_le_bytes().to_vec(),
        }
    }
}

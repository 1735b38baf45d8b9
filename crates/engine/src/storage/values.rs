//! A matrix's values as packing reads them: f32 values already held, or a
//! checkpoint's stored words (little-endian f32, f16 or bf16) widened to f32
//! a piece at a time, so that packing a stored matrix never holds all of it
//! as f32 (a 124M checkpoint's embedding is 154 MB of f32).

use std::ops::Range;

use super::pieces::in_pieces;

/// Values packing reads a piece at a time ([`Format::pack`](super::format::Format::pack)).
pub trait Values: Sync {
    /// How many values there are.
    fn count(&self) -> usize;
    /// `f` of the values in `range`, as f32.
    fn with<R>(&self, range: Range<usize>, f: impl FnOnce(&[f32]) -> R) -> R;
}

impl Values for [f32] {
    fn count(&self) -> usize {
        self.len()
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
/// of them. The data may be unaligned, hence bytes.
#[derive(Clone, Copy)]
pub struct StoredValues<'a> {
    pub stored: Stored,
    pub data: &'a [u8],
}

impl StoredValues<'_> {
    /// The first value that is not finite (NaN or infinite), and where: read
    /// from the bits, without widening (every exponent bit set).
    pub fn first_non_finite(&self) -> Option<(usize, f32)> {
        let size = self.stored.size();
        let exponent = |b: &[u8]| match self.stored {
            Stored::F32 => b[3] & 0x7f == 0x7f && b[2] & 0x80 == 0x80,
            Stored::F16 => b[1] & 0x7c == 0x7c,
            Stored::Bf16 => b[1] & 0x7f == 0x7f && b[0] & 0x80 == 0x80,
        };
        let index = self.data.chunks_exact(size).position(exponent)?;
        Some((index, self.stored.value(&self.data[index * size..])))
    }

    /// Every value as f32, in pieces (natively on every core).
    pub fn to_f32(&self) -> Vec<f32> {
        in_pieces(self.count(), 1, |piece, out| self.widen(piece, out))
    }

    /// The values in `range` into `out` (`range.len()` long).
    fn widen(&self, range: Range<usize>, out: &mut [f32]) {
        let size = self.stored.size();
        let bytes = &self.data[range.start * size..range.end * size];
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(size)) {
            *o = self.stored.value(b);
        }
    }
}

impl Values for StoredValues<'_> {
    fn count(&self) -> usize {
        self.data.len() / self.stored.size()
    }

    fn with<R>(&self, range: Range<usize>, f: impl FnOnce(&[f32]) -> R) -> R {
        let mut values = vec![0.0; range.len()];
        self.widen(range, &mut values);
        f(&values)
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
                let values = StoredValues { stored, data: &data };
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

    /// The bit test agrees with widening and `is_finite` on every f16 and
    /// bf16 pattern, and on f32's edges.
    #[test]
    fn non_finite_bits_agree_with_widening() {
        for stored in [Stored::F16, Stored::Bf16] {
            for bits in 0..=u16::MAX {
                let data = bits.to_le_bytes();
                let values = StoredValues { stored, data: &data };
                let widened = stored.value(&data);
                assert_eq!(values.first_non_finite().is_some(), !widened.is_finite(), "{bits:#x}");
            }
        }
        let edges = [0.0, -0.0, f32::MAX, f32::MIN, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        for v in edges.into_iter().chain([f32::from_bits(0x7f80_0001), f32::from_bits(0xff7f_ffff)])
        {
            let data = v.to_le_bytes();
            let values = StoredValues { stored: Stored::F32, data: &data };
            assert_eq!(values.first_non_finite().is_some(), !v.is_finite(), "{v}");
        }
    }
}

//! A weight matrix as both engines hold it: packed in its [`Format`] (the
//! words and scales the GPU uploads as they are, and the CPU twins read
//! directly, so the browser's CPU fallback gets the smaller formats too).

use super::panels::{self, PANEL};
use super::pieces::{each_part, in_pieces, PIECE};
use super::quads::Dot8;
use super::row_panels;
use super::values::Values;
use crate::storage::f16_bits::{f16_pair_as, lift, lifts, F16_LIFT, F16_RAW_SCALE};
use crate::storage::format::{channel, Channels, Format, GROUP, SHARD_ALIGN};
use crate::storage::pair::{Bf16, Pair, F16};

/// `row`'s even then odd elements into `halves` (the layout of an f16 row's
/// two halves, [`f16_pair_as`]).
pub fn split(row: &[f32], halves: &mut [f32]) {
    let (even, odd) = halves.split_at_mut(row.len() / 2);
    for ((e, d), v) in even.iter_mut().zip(odd).zip(row.chunks_exact(2)) {
        (*e, *d) = (v[0], v[1]);
    }
}

/// A `(rows, cols)` row-major weight matrix in a [`Format`].
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub format: Format,
    pub rows: usize,
    pub cols: usize,
    /// The output-channel axis (per-channel scales, see [`Channels`]).
    pub channels: Channels,
    pub(super) words: Vec<u32>,  // (rows · cols / per_word) packed weights
    pub(super) scales: Vec<f32>, // (format.scale_count) empty for f32 and f16
    /// f16 words whose exponents were raised by [`F16_LIFT`] ([`Matrix::lift_f16`]).
    pub(super) lifted: bool,
    /// f16 or int8 words in column panels ([`Matrix::into_panels`]), not row-major.
    pub(super) panels: bool,
    /// f32 values, int8 or int4 fields in row panels ([`Matrix::into_row_panels`]), not row-major.
    pub(super) row_panels: bool,
    /// int8 words that the CPU engine multiplies by 8-bit activations
    /// ([`Matrix::use_int8_activations`]), and how.
    pub(super) int8_activations: Option<Dot8>,
}

impl Matrix {
    /// `values` packed into `format`.
    pub fn new(
        format: Format,
        rows: usize,
        cols: usize,
        channels: Channels,
        values: &[f32],
    ) -> Matrix {
        Matrix::packed(format, rows, cols, channels, values)
    }

    /// `values` packed into `format`, read a piece at a time: a checkpoint's
    /// stored values are packed without an f32 copy of the matrix.
    pub fn packed(
        format: Format,
        rows: usize,
        cols: usize,
        channels: Channels,
        values: &(impl Values + ?Sized),
    ) -> Matrix {
        debug_assert_eq!(values.count(), rows * cols);
        let (words, scales) = format.pack(values, cols, channels);
        Matrix::of_words(format, rows, cols, channels, words, scales)
    }

    /// A matrix over words already packed in `format` (not lifted).
    fn of_words(
        format: Format,
        rows: usize,
        cols: usize,
        channels: Channels,
        words: Vec<u32>,
        scales: Vec<f32>,
    ) -> Matrix {
        let (lifted, panels, row_panels, int8_activations) = (false, false, false, None);
        Matrix {
            format,
            rows,
            cols,
            channels,
            words,
            scales,
            lifted,
            panels,
            row_panels,
            int8_activations,
        }
    }

    /// An f32 matrix that takes `values` over (no copy).
    pub fn from_f32(rows: usize, cols: usize, channels: Channels, values: Vec<f32>) -> Matrix {
        debug_assert_eq!(values.len(), rows * cols);
        let words = bytemuck::allocation::cast_vec(values);
        Matrix::of_words(Format::F32, rows, cols, channels, words, Vec::new())
    }

    /// An f16 matrix from its values' little-endian bytes as a checkpoint
    /// stores them (`data`: 2 · rows · cols bytes): two values per word, the
    /// first in the low half, as [`Format::pack`] puts them, so the words are
    /// those of packing the same values from f32.
    pub fn from_f16_le(rows: usize, cols: usize, channels: Channels, data: &[u8]) -> Matrix {
        let copy = |out: &mut [u8]| {
            out.copy_from_slice(data);
            Ok::<_, std::convert::Infallible>(())
        };
        match Matrix::from_f16_read(rows, cols, channels, copy) {
            Ok(m) => m,
            Err(never) => match never {},
        }
    }

    /// [`from_f16_le`](Self::from_f16_le) with the bytes read by `read`
    /// straight into the matrix's words (`read` fills 2 · rows · cols
    /// bytes): a file on disk or in a JavaScript array is read into the
    /// memory that keeps it, with no buffer of its own on the way (at 124M,
    /// a third of an f16 load's fresh memory, and the page's 77 MB hole
    /// where the embedding's bytes were).
    pub fn from_f16_read<E>(
        rows: usize,
        cols: usize,
        channels: Channels,
        read: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<Matrix, E> {
        let n = rows * cols;
        // An odd count's last word has a zero high half (padding).
        let mut words = vec![0u32; n.div_ceil(2)];
        read(&mut bytemuck::cast_slice_mut(&mut words)[..2 * n])?;
        // The bytes are little-endian words: nothing to do on the page or x86.
        words.iter_mut().for_each(|w| *w = u32::from_le(*w));
        Ok(Matrix::of_words(Format::F16, rows, cols, channels, words, Vec::new()))
    }

    /// The same weights in `format`: unpacked to f32 and packed again, so
    /// convert from the loaded (f32 or f16) matrix, not from a quantised one.
    pub fn to_format(&self, format: Format) -> Matrix {
        if format == self.format {
            return self.clone();
        }
        let pack =
            |values: &[f32]| Matrix::new(format, self.rows, self.cols, self.channels, values);
        // A row-major f32 matrix packs from its own words: no f32 copy.
        match self.as_f32() {
            Some(values) => pack(values),
            None => pack(&self.to_f32()),
        }
    }

    /// Element `i` (row-major) as the kernels compute with it.
    pub fn get(&self, i: usize) -> f32 {
        if self.row_panels {
            let at = self.row_panels_at(i / self.cols, i % self.cols);
            let ch = channel(i, self.cols, self.channels);
            return self.format.load(&self.words, &self.scales, at, ch);
        }
        if self.reordered() && !self.panels {
            return self.quads_get(i);
        }
        if self.panels {
            let (r, c, per) = (i / self.cols, i % self.cols, self.format.per_word());
            let (word, t) = panels::locate(r, c, self.rows, per);
            let pair = match self.format {
                Format::F32 => return f32::from_bits(self.words[word]),
                Format::F16 => {
                    Some(F16::<false> { scale: self.f16_scale() }.pair(self.words[word]))
                }
                Format::Bf16 => Some(Bf16.pair(self.words[word])),
                _ => None,
            };
            if let Some((lo, hi)) = pair {
                return if t == 1 { hi } else { lo };
            }
            // int8: the byte, times its column's scale, as Format::load.
            let q = (self.words[word] >> (8 * t)) as u8 as i8;
            return f32::from(q) * self.scales[if self.format == Format::Int8 { c } else { 0 }];
        }
        if self.lifted {
            let (lo, hi) = f16_pair_as::<false>(self.words[i / 2], self.f16_scale());
            return if i.is_multiple_of(2) { lo } else { hi };
        }
        let ch = channel(i, self.cols, self.channels);
        self.format.load(&self.words, &self.scales, i, ch)
    }

    /// What a raw f16 value ([`f16_pair_raw`](super::f16_bits::f16_pair_raw)) of this matrix is multiplied
    /// by to be the weight: 2¹¹², or 2¹⁰² once [lifted](Matrix::lift_f16).
    pub fn f16_scale(&self) -> f32 {
        match self.lifted {
            true => F16_RAW_SCALE / (1 << F16_LIFT) as f32,
            false => F16_RAW_SCALE,
        }
    }

    /// Raises every exponent of an f16 matrix's words by [`F16_LIFT`], in
    /// place, so that no weight is a subnormal number when the kernels read
    /// it raw: x86 multiplies a subnormal operand in microcode, and the
    /// 0.2 % of a GPT-2 matrix's weights below 2⁻¹⁴ made the decode step's
    /// products up to 1.6× slower. The values are the same ([`get`](Self::get),
    /// and the kernels scale their inputs by 2¹⁰² instead of 2¹¹², so every
    /// product is the same real number, rounded the same way). For the CPU
    /// engine only: the GPU reads the words as f16. False (nothing changed)
    /// if the matrix is not f16 or holds a weight of 64 or more.
    pub fn lift_f16(&mut self) -> bool {
        if self.format != Format::F16 || self.lifted {
            return false;
        }
        // Checked, then lifted, a piece at a time without a branch (loops the
        // compiler vectorises), natively on every core: this was 16 % of an
        // f16 model's load on one thread, a half at a time.
        let halves = |w: u32| [w & 0xffff, w >> 16];
        let fits = in_pieces(self.words.len(), PIECE, |piece, out| {
            let words = self.words[piece].iter();
            out[0] = words.fold(true, |all, &w| {
                let [lo, hi] = halves(w);
                all & lifts(lo) & lifts(hi)
            });
        });
        if !fits.into_iter().all(|fits| fits) {
            return false;
        }
        each_part(&mut self.words, PIECE, |_, words| {
            for w in words {
                let [lo, hi] = halves(*w).map(lift);
                *w = lo | (hi << 16);
            }
        });
        self.lifted = true;
        true
    }

    /// Whether [`lift_f16`](Self::lift_f16) raised this matrix's exponents.
    pub fn is_lifted(&self) -> bool {
        self.lifted
    }

    /// Lays an f32, f16, bf16 or int8 (per column or per tensor) matrix's
    /// words out in column panels ([`panels`]): the CPU engine's decode step
    /// then reads it as one stream. The values are the same ([`get`](Self::get));
    /// the GPU, which reads row-major words, refuses it. False (nothing
    /// changed) unless the matrix is one of those, row-major, and its
    /// columns a whole number of panels (at least one row).
    pub fn into_panels(&mut self) -> bool {
        let whole = self.rows > 0 && self.cols > 0 && self.cols.is_multiple_of(PANEL);
        let int8 = match self.format {
            Format::Int8 => self.channels == Channels::Cols,
            Format::Int8PerTensor => true,
            _ => false,
        };
        let floats = matches!(self.format, Format::F32 | Format::F16 | Format::Bf16);
        if !(floats || int8) || self.reordered() || !whole {
            return false;
        }
        self.words = panels::from_rows(&self.words, self.rows, self.cols, self.format.per_word());
        self.panels = true;
        true
    }

    /// The values of an f32 matrix in column panels (`None` when row-major).
    pub fn f32_panels(&self) -> Option<&[f32]> {
        (self.panels && self.format == Format::F32).then(|| bytemuck::cast_slice(&self.words))
    }

    /// The words of an f16 matrix in column panels (`None` when row-major).
    pub fn f16_panels(&self) -> Option<&[u32]> {
        (self.panels && self.format == Format::F16).then_some(&self.words)
    }

    /// The words of a bf16 matrix in column panels (`None` when row-major).
    pub fn bf16_panels(&self) -> Option<&[u32]> {
        (self.panels && self.format == Format::Bf16).then_some(&self.words)
    }

    /// The words of an int8 matrix in column panels (`None` when row-major).
    pub fn int8_panels(&self) -> Option<&[u32]> {
        let int8 = matches!(self.format, Format::Int8 | Format::Int8PerTensor);
        (self.panels && int8).then_some(&self.words)
    }

    /// Whether the words are in a layout only the CPU engine reads (lifted,
    /// in panels or quad panels) or multiply 8-bit activations: the GPU
    /// engine refuses such a matrix.
    pub fn cpu_only(&self) -> bool {
        self.lifted || self.reordered()
    }

    /// Whether the words are out of row-major order (column or row panels,
    /// or any layout for 8-bit activations).
    pub(super) fn reordered(&self) -> bool {
        self.panels || self.row_panels || self.int8_activations.is_some()
    }

    /// Every element as f32.
    pub fn to_f32(&self) -> Vec<f32> {
        if self.f32_panels().is_some() {
            let words = panels::to_rows(&self.words, self.rows, self.cols, 1);
            return words.into_iter().map(f32::from_bits).collect();
        }
        if self.f32_row_panels().is_some() {
            let words = row_panels::to_rows(&self.words, self.rows, self.cols);
            return words.into_iter().map(f32::from_bits).collect();
        }
        match self.as_f32() {
            Some(v) => v.to_vec(),
            None => (0..self.rows * self.cols).map(|i| self.get(i)).collect(),
        }
    }

    /// The values themselves, row-major, when the format is f32 (`None` in
    /// column or row panels: [`f32_panels`](Self::f32_panels),
    /// [`f32_row_panels`](Self::f32_row_panels)).
    pub fn as_f32(&self) -> Option<&[f32]> {
        let rows = self.format == Format::F32 && !self.reordered();
        rows.then(|| bytemuck::cast_slice(&self.words))
    }

    /// The words of an f16 matrix whose every row starts on a word (even
    /// `cols`): `(rows, cols / 2)`, row `r`'s elements `2i` and `2i + 1` in
    /// word `i` ([`f16_pair_as`]). The CPU twins' fast path reads these directly,
    /// keeping even and odd columns apart instead of interleaving them per
    /// element (which the compiler does not vectorise).
    pub fn f16_words(&self) -> Option<&[u32]> {
        self.pair_rows(Format::F16)
    }

    /// [`f16_words`](Self::f16_words) for bf16: `(rows, cols / 2)`, the
    /// same places ([`Bf16`]).
    pub fn bf16_words(&self) -> Option<&[u32]> {
        self.pair_rows(Format::Bf16)
    }

    /// The row-major words of a matrix in `format` (two values a word) whose
    /// every row starts on a word.
    fn pair_rows(&self, format: Format) -> Option<&[u32]> {
        let rows = self.format == format && !self.reordered();
        (rows && self.cols.is_multiple_of(2)).then_some(&self.words)
    }

    /// The packed words, as uploaded.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The scales (empty unless the format has them), as uploaded.
    pub fn scales(&self) -> &[f32] {
        &self.scales
    }

    /// Bytes held: words plus scales.
    pub fn bytes(&self) -> u64 {
        4 * (self.words.len() + self.scales.len()) as u64
    }

    /// Rows per shard when the words of this matrix must be split into
    /// bindings of at most `max_bytes` (a GPU's `max_storage_buffer_binding_size`:
    /// GPT-2's f32 embedding is 154 MB, WebGPU's default limit 128 MiB). A
    /// multiple of [`SHARD_ALIGN`] rows, so every shard starts on a word and an
    /// int4 group; all rows when they fit; `None` when not even that many do.
    pub fn shard_rows(&self, max_bytes: u64) -> Option<usize> {
        shard_rows(self.format, self.rows, self.cols, max_bytes)
    }

    /// Rows `r0..r1` as a matrix of their own: the same words and scales,
    /// sliced, not repacked (a quantised matrix stays bit for bit what it
    /// was). `r0` must be a multiple of [`SHARD_ALIGN`]; the output channels
    /// must be the rows (the embedding and LM head, the matrices split by
    /// vocabulary rows). An LM head laid out for 8-bit activations is cut
    /// by its panels of rows.
    pub fn shard(&self, r0: usize, r1: usize) -> Matrix {
        assert!(r0.is_multiple_of(SHARD_ALIGN) && r0 < r1 && r1 <= self.rows);
        if self.int8_activations == Some(Dot8::Rows) {
            return self.head_rows(r0, r1);
        }
        if self.row_panels {
            return self.row_panels_rows(r0, r1);
        }
        assert!(!self.reordered(), "a matrix in panels is split by columns");
        assert_eq!(self.channels, Channels::Rows, "only row channels are split by rows");
        let (start, end) = (r0 * self.cols, r1 * self.cols);
        let per = self.format.per_word();
        let words = self.words[start / per..end.div_ceil(per)].to_vec();
        let scales = match self.format {
            Format::F32 | Format::F16 | Format::Bf16 | Format::Int8PerTensor => self.scales.clone(),
            Format::Int8 => self.scales[r0..r1].to_vec(),
            Format::Int4 => self.scales[start / GROUP..end.div_ceil(GROUP)].to_vec(),
        };
        Matrix { words, scales, rows: r1 - r0, ..*self }
    }

    /// Whether `format` holds every weight exactly (an f16 checkpoint in f16).
    pub fn exact_in(&self, format: Format) -> bool {
        if format == self.format {
            return true;
        }
        match self.as_f32() {
            // Per value, stopping at the first miss: no packed copy of a 154 MB `wte`.
            Some(v) if format.holds(0.0).is_some() => {
                v.iter().all(|&x| format.holds(x) == Some(true))
            }
            _ => self.to_format(format).to_f32() == self.to_f32(),
        }
    }
}

/// [`Matrix::shard_rows`] of a `(rows, cols)` matrix in `format`, before it is packed.
pub fn shard_rows(format: Format, rows: usize, cols: usize, max_bytes: u64) -> Option<usize> {
    let words = |rows: usize| format.bytes(rows * cols);
    if words(rows) <= max_bytes {
        return Some(rows.max(1));
    }
    let fit = (max_bytes / 4) as usize * format.per_word() / cols.max(1);
    let rows = fit / SHARD_ALIGN * SHARD_ALIGN;
    (rows > 0).then_some(rows)
}

/// The `(first row, rows)` of each shard of `rows` rows cut `per` at a time.
pub fn shards(rows: usize, per: usize) -> Vec<(usize, usize)> {
    (0..rows).step_by(per.max(1)).map(|r0| (r0, (r0 + per).min(rows) - r0)).collect()
}

//! How weight matrices are stored for the kernels that read them (matmul,
//! ln_qkv, matvec_residual, ln_fc_gelu, lm_head, embedding): each format is a WGSL snippet
//! (`shaders/format_*.wgsl`, prepended to those kernels) defining the word type
//! of the `w` binding and `w_load(i, ch)` (element `i`, output channel `ch`),
//! and here its CPU twin [`Format::load`] and the packing that writes the words
//! and scales. Layer norms, biases, the position embedding and the KV cache
//! stay f32 in every format.

use half::{bf16, f16};

use super::pieces::{in_parts, in_pieces, PIECE};
use super::values::Values;

/// A weight storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One f32 per weight (4 bytes).
    F32,
    /// Two f16 per u32 word (2 bytes per weight); widened to f32 in the kernel.
    F16,
    /// Two bf16 per u32 word (2 bytes per weight): f32's top 16 bits, rounded
    /// to nearest even (f32's range, 8 bits of precision).
    Bf16,
    /// Symmetric int8, four per u32 word, one f32 scale per output channel
    /// (`scale = max|w| / 127` over the channel).
    Int8,
    /// Symmetric int8 with one f32 scale for the whole matrix (`max|w| / 127`
    /// over every weight): the per-tensor scheme per channel improves on.
    Int8PerTensor,
    /// Symmetric int4, eight per u32 word, one f32 scale per group of
    /// [`GROUP`] consecutive weights (llama.cpp's q4_0 rule: `scale = w_max / -8`
    /// where `w_max` is the group's weight of largest magnitude, sign kept).
    Int4,
}

/// Weights per int4 scale.
pub const GROUP: usize = 32;

/// Shards of a matrix split by rows start at a multiple of this many rows: a
/// whole number of words and int4 groups whatever `cols` is.
pub const SHARD_ALIGN: usize = GROUP;

/// The binding of the `scales` array in the formats that have one (after
/// every kernel's own bindings).
pub const SCALES_BINDING: u32 = 8;

/// Which axis of a `(rows, cols)` matrix indexes output channels (int8 keeps
/// one scale per channel): the columns of a Conv1D `[in, out]` weight, the
/// rows of the `[vocab, n_embd]` embedding / LM head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    Rows,
    Cols,
}

impl Format {
    pub const ALL: [Format; 6] =
        [Format::F32, Format::F16, Format::Bf16, Format::Int8PerTensor, Format::Int8, Format::Int4];

    /// Whether the CPU engine can multiply matrices in this format by 8-bit
    /// activations (`Weights::use_int8_activations`): int8 and int4.
    pub fn takes_int8_activations(self) -> bool {
        matches!(self, Format::Int8 | Format::Int8PerTensor | Format::Int4)
    }

    /// The name on the command line (`--weights`), in URLs and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Format::F32 => "f32",
            Format::F16 => "f16",
            Format::Bf16 => "bf16",
            Format::Int8 => "int8",
            Format::Int8PerTensor => "int8-tensor",
            Format::Int4 => "int4",
        }
    }

    /// Every format's name, in `ALL` order (the page's format choices).
    pub const NAMES: [&'static str; Format::ALL.len()] = {
        let mut names = [""; Format::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = Format::ALL[i].name();
            i += 1;
        }
        names
    };

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The WGSL snippet defining `Word` and `w_load`.
    pub fn snippet(self) -> &'static str {
        match self {
            Format::F32 => include_str!("../../../../shaders/format_f32.wgsl"),
            Format::F16 => include_str!("../../../../shaders/format_f16.wgsl"),
            Format::Bf16 => include_str!("../../../../shaders/format_bf16.wgsl"),
            Format::Int8 => include_str!("../../../../shaders/format_int8.wgsl"),
            Format::Int8PerTensor => include_str!("../../../../shaders/format_int8_tensor.wgsl"),
            Format::Int4 => include_str!("../../../../shaders/format_int4.wgsl"),
        }
    }

    /// Weights per u32 word.
    pub fn per_word(self) -> usize {
        match self {
            Format::F32 => 1,
            Format::F16 | Format::Bf16 => 2,
            Format::Int8 | Format::Int8PerTensor => 4,
            Format::Int4 => 8,
        }
    }

    /// Whether the kernels bind a `scales` array at [`SCALES_BINDING`].
    pub fn has_scales(self) -> bool {
        matches!(self, Format::Int8 | Format::Int8PerTensor | Format::Int4)
    }

    /// Scales of a `(rows, cols)` matrix with output channels along `channels`.
    pub fn scale_count(self, rows: usize, cols: usize, channels: Channels) -> usize {
        match (self, channels) {
            (Format::F32 | Format::F16 | Format::Bf16, _) => 0,
            (Format::Int8PerTensor, _) => usize::from(rows * cols > 0),
            (Format::Int8, Channels::Rows) => rows,
            (Format::Int8, Channels::Cols) => cols,
            (Format::Int4, _) => (rows * cols).div_ceil(GROUP),
        }
    }

    /// Bytes of the words holding `n` weights (whole 4-byte words; scales apart).
    pub fn bytes(self, n: usize) -> u64 {
        4 * n.div_ceil(self.per_word()) as u64
    }

    /// Whether this format holds `v` exactly by itself (f32 always, f16 when
    /// `v` is an f16 value); the scaled formats depend on the other weights
    /// sharing the scale, so no single value answers for them.
    pub fn holds(self, v: f32) -> Option<bool> {
        match self {
            Format::F32 => Some(true),
            Format::F16 => Some(f16::from_f32(v).to_f32() == v),
            Format::Bf16 => Some(bf16::from_f32(v).to_f32() == v),
            Format::Int8 | Format::Int8PerTensor | Format::Int4 => None,
        }
    }

    /// Packs a `(rows, cols)` row-major matrix: (words, scales). An incomplete
    /// last word is padded with zeros. The scales come first, from the whole
    /// matrix; the words then in [`in_pieces`], natively on every core
    /// (loading GPT-2-124M in int8 spent two thirds of its time here, on one
    /// thread): each piece's words are the ones packing it in one go would
    /// give, since a piece starts on a word and on a group. `w` is read a
    /// piece at a time, in both passes: a checkpoint's stored values are
    /// widened to f32 one piece at a time ([`Values`]).
    pub fn pack(
        self,
        w: &(impl Values + ?Sized),
        cols: usize,
        channels: Channels,
    ) -> (Vec<u32>, Vec<f32>) {
        let scales = self.scales_of(w, cols, channels);
        let words = in_pieces(w.count(), self.per_word(), |piece, out| {
            let at = piece.start;
            w.with(piece, |values| self.words(values, at, cols, channels, &scales, out))
        });
        (words, scales)
    }

    /// [`pack`](Format::pack)'s scales of the whole matrix `w`, from its
    /// pieces' (maxima are the same in any order).
    fn scales_of(self, w: &(impl Values + ?Sized), cols: usize, channels: Channels) -> Vec<f32> {
        let len = w.count();
        match self {
            Format::F32 | Format::F16 | Format::Bf16 => Vec::new(),
            Format::Int8 => int8_scales(w, cols, channels),
            Format::Int8PerTensor => {
                let piece_max = in_pieces(len, PIECE, |p, out| out[0] = w.with(p, absmax));
                let scale = piece_max.into_iter().fold(0.0f32, f32::max) / 127.0;
                vec![scale; self.scale_count(len / cols.max(1), cols, channels)]
            }
            // (a piece holds whole groups)
            Format::Int4 => in_pieces(len, GROUP, |p, out| {
                w.with(p, |values| {
                    for (s, group) in out.iter_mut().zip(values.chunks(GROUP)) {
                        *s = int4_scale(group);
                    }
                })
            }),
        }
    }

    /// The words of the piece `w` whose first weight is the matrix's `at`
    /// (on a word's and a group's first weight), in the matrix's `scales`,
    /// into `out` (zeroed: one word for every [`per_word`](Self::per_word)
    /// weights).
    fn words(
        self,
        w: &[f32],
        at: usize,
        cols: usize,
        channels: Channels,
        scales: &[f32],
        out: &mut [u32],
    ) {
        match self {
            Format::F32 => {
                for (o, v) in out.iter_mut().zip(w) {
                    *o = v.to_bits();
                }
            }
            Format::F16 => {
                let halves = w.iter().map(|&v| u32::from(f16::from_f32(v).to_bits()));
                pack_fields::<16>(halves, out)
            }
            Format::Bf16 => {
                let halves = w.iter().map(|&v| u32::from(bf16::from_f32(v).to_bits()));
                pack_fields::<16>(halves, out)
            }
            Format::Int8 => {
                let fields = int8_fields(w, |i| scales[channel(at + i, cols, channels)]);
                pack_fields::<8>(fields, out)
            }
            Format::Int8PerTensor => pack_fields::<8>(int8_fields(w, |_| scales[0]), out),
            Format::Int4 => {
                let q = w.iter().enumerate().map(|(i, &v)| {
                    let s = scales[(at + i) / GROUP];
                    let inv = if s != 0.0 { 1.0 / s } else { 0.0 };
                    // q4_0's rounding: truncate v/s + 8.5 into [0, 15], stored minus 8.
                    let q = ((v * inv + 8.5) as i32).clamp(0, 15) - 8;
                    (q as u32) & 0xf
                });
                pack_fields::<4>(q, out)
            }
        }
    }

    /// CPU twin of the snippet's `w_load(i, ch)` on packed `words` and `scales`.
    pub fn load(self, words: &[u32], scales: &[f32], i: usize, ch: usize) -> f32 {
        let field = |bits: usize| {
            let per = 32 / bits;
            let shift = (i % per) * bits;
            // Sign-extends the field, as WGSL's `extractBits` on an i32 does.
            ((words[i / per] << (32 - bits - shift)) as i32) >> (32 - bits)
        };
        match self {
            Format::F32 => f32::from_bits(words[i]),
            Format::F16 => f16::from_bits((words[i / 2] >> (16 * (i % 2))) as u16).to_f32(),
            Format::Bf16 => f32::from_bits((words[i / 2] >> (16 * (i % 2))) << 16),
            Format::Int8 => field(8) as f32 * scales[ch],
            Format::Int8PerTensor => field(8) as f32 * scales[0],
            Format::Int4 => field(4) as f32 * scales[i / GROUP],
        }
    }
}

/// Field `t` (bits 4t..4t + 4) of an int4 word, sign-extended: what the CPU
/// engine's loops decode, eight lanes a word. In wasm the field is moved to
/// the top by a multiply (SIMD128 shifts every lane by one count; it
/// multiplies lane by lane), natively by a shift (AVX2 shifts lane by lane).
#[inline(always)]
pub fn nibble(word: u32, t: usize) -> i32 {
    #[cfg(target_arch = "wasm32")]
    let top = word.wrapping_mul(1 << (28 - 4 * t));
    #[cfg(not(target_arch = "wasm32"))]
    let top = word << (28 - 4 * t);
    top as i32 >> 28
}

/// The eight weights of an int4 word, field t times its group's `scale`
/// (the twin's `field · scale`): how every CPU loop decodes a word.
#[inline(always)]
pub fn int4_weights(word: u32, scale: f32) -> [f32; 8] {
    std::array::from_fn(|t| nibble(word, t) as f32 * scale)
}

/// The output channel of element `i` of a matrix with `cols` columns.
pub fn channel(i: usize, cols: usize, channels: Channels) -> usize {
    match channels {
        Channels::Rows => i / cols,
        Channels::Cols => i % cols,
    }
}

/// `BITS`-wide fields into the zeroed `words`, element j at bit `(j % (32 /
/// BITS)) · BITS` of word `j / (32 / BITS)`.
fn pack_fields<const BITS: usize>(fields: impl Iterator<Item = u32>, words: &mut [u32]) {
    let per = 32 / BITS;
    for (j, f) in fields.enumerate() {
        words[j / per] |= f << ((j % per) * BITS);
    }
}

/// Each weight as an int8 field: `round(v / scale(i))` in [-127, 127].
fn int8_fields<'a>(
    w: &'a [f32],
    scale: impl Fn(usize) -> f32 + 'a,
) -> impl Iterator<Item = u32> + 'a {
    w.iter().enumerate().map(move |(i, &v)| {
        let s = scale(i);
        let q = if s > 0.0 { (v / s).round().clamp(-127.0, 127.0) } else { 0.0 };
        (q as i32 as u32) & 0xff
    })
}

/// The largest magnitude in `w` (0 for none).
fn absmax(w: &[f32]) -> f32 {
    w.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// `max|w| / 127` per output channel, over parts of whole rows: row by row,
/// no division a weight (`channel`'s: a third of an int8 load's time went to
/// finding the channels). Along columns each part keeps its own maxima,
/// folded after.
fn int8_scales(w: &(impl Values + ?Sized), cols: usize, channels: Channels) -> Vec<f32> {
    let (len, n_cols, cols) = (w.count(), cols, cols.max(1));
    let rows_per = (PIECE / cols).max(1); // rows a part
    let part_rows = |i: usize| i * rows_per * cols..((i + 1) * rows_per * cols).min(len);
    let channel_max = match channels {
        Channels::Rows => in_parts(len / cols, rows_per, |i, out| {
            w.with(part_rows(i), |part| {
                for (m, row) in out.iter_mut().zip(part.chunks(cols)) {
                    *m = absmax(row);
                }
            })
        }),
        Channels::Cols => {
            let parts = (len / cols).div_ceil(rows_per);
            let maxima = in_parts(parts * cols, cols, |i, out: &mut [f32]| {
                w.with(part_rows(i), |part| {
                    for row in part.chunks(cols) {
                        for (m, v) in out.iter_mut().zip(row) {
                            *m = m.max(v.abs());
                        }
                    }
                })
            });
            let fold = |mut all: Vec<f32>, part: &[f32]| {
                all.iter_mut().zip(part).for_each(|(m, p)| *m = m.max(*p));
                all
            };
            maxima.chunks(cols).fold(vec![0.0f32; n_cols], fold)
        }
    };
    channel_max.into_iter().map(|m| m / 127.0).collect()
}

/// q4_0's scale: the group's weight of largest magnitude (sign kept) over -8,
/// so that weight lands exactly on -8 and the others in [-8, 7].
fn int4_scale(group: &[f32]) -> f32 {
    let extreme = group.iter().fold(0.0f32, |m, &v| if v.abs() > m.abs() { v } else { m });
    extreme / -8.0
}

#[cfg(test)]
mod tests {
    use super::super::pieces::PIECE;
    use super::*;

    /// Packing in pieces (natively on every core) gives the words and scales
    /// of packing in one go: every format, both channel axes, a matrix of
    /// three pieces and a tail that is neither whole words nor whole groups,
    /// whose rows and columns each have their own magnitude (so a piece that
    /// took the wrong channel's or group's scale would differ).
    #[test]
    fn pieces_pack_as_one() {
        let (rows, cols) = (3 * PIECE / 45 + 8, 45); // 196,965 weights
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                let v = ((i * 7919) % 1013) as f32 / 506.0 - 1.0;
                v * (1 + r % 13) as f32 * (1 + c % 7) as f32
            })
            .collect();
        for format in Format::ALL {
            for channels in [Channels::Rows, Channels::Cols] {
                let (words, scales) = format.pack(&w[..], cols, channels);
                let one_scales = one_go_scales(format, &w, cols, channels);
                let mut one_words = vec![0; w.len().div_ceil(format.per_word())];
                format.words(&w, 0, cols, channels, &one_scales, &mut one_words);
                assert_eq!(scales, one_scales, "{format:?} {channels:?} scales");
                assert!(words == one_words, "{format:?} {channels:?} words");
            }
        }
    }

    /// The scales of `w` from every weight in turn, by the formats' rules.
    fn one_go_scales(format: Format, w: &[f32], cols: usize, channels: Channels) -> Vec<f32> {
        let n = format.scale_count(w.len() / cols, cols, channels);
        match format {
            Format::F32 | Format::F16 | Format::Bf16 => Vec::new(),
            Format::Int4 => w.chunks(GROUP).map(int4_scale).collect(),
            Format::Int8PerTensor => vec![absmax(w) / 127.0; n],
            Format::Int8 => {
                let mut m = vec![0.0f32; n];
                for (i, v) in w.iter().enumerate() {
                    let ch = channel(i, cols, channels);
                    m[ch] = m[ch].max(v.abs());
                }
                m.into_iter().map(|m| m / 127.0).collect()
            }
        }
    }
}

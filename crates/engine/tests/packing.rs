//! The weight formats' packing, natively: f16 two to a word, int8 scaled per
//! output channel (and per tensor), int4 in groups of 32 the q4_0 way, bf16
//! rounded to nearest even, unpacked rows equal to the twin of `w_load`, and
//! shards of rows holding their parent's values.
#![cfg(not(target_arch = "wasm32"))]

use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;

/// The f16 packing and its CPU twin: two per word, low half first, an odd
/// count padded; values already f16 unchanged, others rounded to nearest even.
#[test]
fn f16_format_packs_two_per_word_and_rounds_to_nearest() {
    let w = [1.0f32, -2.5, 0.1, 65504.0, 3.0];
    let m = Matrix::new(Format::F16, 1, 5, Channels::Cols, &w);
    assert_eq!(m.words().len(), 3); // 5 halves in 3 words
    assert_eq!((m.bytes(), Format::F16.bytes(5)), (12, 12));
    assert_eq!(m.words()[0] & 0xffff, 0x3c00); // 1.0
    assert_eq!(m.words()[0] >> 16, 0xc100); // -2.5
    assert_eq!(m.words()[2] >> 16, 0); // the padding half
    let back = m.to_f32();
    assert_eq!(back[..2], [1.0, -2.5]);
    assert_eq!(back[2], half::f16::from_f32(0.1).to_f32());
    assert_eq!(Matrix::new(Format::F32, 1, 5, Channels::Cols, &w).to_f32(), w);
    assert_eq!(Format::from_name("f16"), Some(Format::F16));
    assert_eq!(Format::F16.holds(-2.5), Some(true));
    assert_eq!(Format::F16.holds(0.1), Some(false));
    assert_eq!(Format::F32.holds(0.1), Some(true));
    assert!(!m.exact_in(Format::F32) || m.exact_in(Format::F16));
}

/// int8: one scale per output channel (`max|w| / 127`), four values per word
/// low byte first, each channel's extreme exactly ±127 · scale, every value
/// within half a step; the channel axis is the columns of a Conv1D weight
/// and the rows of the embedding.
#[test]
fn int8_format_scales_each_output_channel() {
    // (2, 3): column 1 holds an outlier; column 2 is all zeros.
    let w = [0.5f32, -100.0, 0.0, -0.25, 3.0, 0.0];
    let by_col = Matrix::new(Format::Int8, 2, 3, Channels::Cols, &w);
    assert_eq!(by_col.scales(), &[0.5 / 127.0, 100.0 / 127.0, 0.0]);
    assert_eq!((by_col.words().len(), by_col.bytes()), (2, 8 + 12));
    assert_eq!(by_col.words()[0] & 0xff, 127); // 0.5 / (0.5 / 127)
    assert_eq!((by_col.words()[0] >> 8) & 0xff, (-127i32 as u32) & 0xff);
    let back = by_col.to_f32();
    for (i, (&a, &b)) in w.iter().zip(&back).enumerate() {
        let step = by_col.scales()[i % 3];
        assert!((a - b).abs() <= step / 2.0 * 1.0001, "{i}: {a} vs {b}");
    }
    assert_eq!((back[0], back[1], back[2]), (0.5, -100.0, 0.0));
    // Per row, the outlier's row gets the coarse grid and the other row keeps a fine one.
    let by_row = Matrix::new(Format::Int8, 2, 3, Channels::Rows, &w);
    assert_eq!(by_row.scales(), &[100.0 / 127.0, 3.0 / 127.0]);
    assert_eq!(Format::Int8.holds(1.0), None);
    assert!(Matrix::new(Format::Int8, 1, 2, Channels::Cols, &[0.5, -0.25]).exact_in(Format::Int8));
}

/// int4 (q4_0's rule): groups of 32 consecutive weights, eight per word low
/// nibble first, the group's largest-magnitude weight exactly -8 · scale,
/// every other value within half a step unless clipped at +7.
#[test]
fn int4_format_packs_groups_of_32_the_q4_0_way() {
    let mut w = cases::random(70, 7); // two full groups and a partial one
    w[42] = -3.0; // the extreme of group 1, negative: its scale is positive
    let m = Matrix::new(Format::Int4, 7, 10, Channels::Cols, &w);
    assert_eq!(m.scales().len(), 3);
    assert_eq!(m.words().len(), 9); // 70 nibbles in 9 words
    assert_eq!(m.scales()[1], -3.0 / -8.0);
    let back = m.to_f32();
    assert_eq!(back[42], -3.0);
    assert_eq!((m.words()[5] >> 8) & 0xf, 8); // -8 as a nibble
    for (i, (&a, &b)) in w.iter().zip(&back).enumerate() {
        let step = m.scales()[i / 32].abs();
        let clipped = a / m.scales()[i / 32] > 7.5;
        assert!(clipped || (a - b).abs() <= step / 2.0 * 1.0001, "{i}: {a} vs {b}");
    }
    let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["f32", "f16", "bf16", "int8-tensor", "int8", "int4"]);
}

/// bf16: f32's top 16 bits, rounded to nearest even (a tie goes to the even
/// mantissa), two per word low half first; f32's range, so 1e30 survives
/// where f16 overflows.
#[test]
fn bf16_format_keeps_the_top_half_of_f32_rounded_to_nearest_even() {
    let tie_down = 1.0 + 2f32.powi(-8); // halfway between 1 and 1 + 2^-7: even is 1
    let tie_up = 1.0 + 3.0 * 2f32.powi(-8); // halfway between 1 + 2^-7 and 1 + 2^-6: even is the latter
    let w = [1.0f32, -2.5, tie_down, tie_up, 1.0e30];
    let m = Matrix::new(Format::Bf16, 1, 5, Channels::Cols, &w);
    assert_eq!((m.words().len(), m.bytes()), (3, 12));
    assert_eq!(m.words()[0], (0xc020 << 16) | 0x3f80); // -2.5 high, 1.0 low
    let back = m.to_f32();
    assert_eq!(back[..4], [1.0, -2.5, 1.0, 1.0 + 2f32.powi(-6)]);
    assert!((back[4] / 1.0e30 - 1.0).abs() < 2f32.powi(-8));
    assert_eq!(Format::Bf16.holds(-2.5), Some(true));
    assert_eq!(Format::Bf16.holds(0.1), Some(false));
}

/// int8 per tensor: one scale, `max|w| / 127` over the whole matrix, so an
/// outlier coarsens every channel's grid; per channel, the other channels keep
/// fine grids and the rounding error falls (the lesson's point, in numbers).
#[test]
fn int8_per_tensor_has_one_scale_and_loses_more_than_per_channel() {
    let (rows, cols) = (16, 8);
    let mut w = cases::random(rows * cols, 3);
    w[5] = 40.0; // one outlier in column 5
    let tensor = Matrix::new(Format::Int8PerTensor, rows, cols, Channels::Cols, &w);
    assert_eq!(tensor.scales(), &[40.0 / 127.0]);
    assert_eq!(tensor.bytes(), 4 * (rows * cols / 4) as u64 + 4);
    let channel = Matrix::new(Format::Int8, rows, cols, Channels::Cols, &w);
    // Rounding error over the channels without the outlier.
    let rms = |m: &Matrix| {
        let back = m.to_f32();
        let others = w.iter().zip(&back).enumerate().filter(|(i, _)| i % cols != 5);
        let sq: Vec<f32> = others.map(|(_, (a, b))| (a - b) * (a - b)).collect();
        (sq.iter().sum::<f32>() / sq.len() as f32).sqrt()
    };
    for (i, (&a, &b)) in w.iter().zip(&tensor.to_f32()).enumerate() {
        assert!((a - b).abs() <= 40.0 / 127.0 / 2.0 * 1.0001, "{i}: {a} vs {b}");
    }
    assert!(rms(&channel) * 10.0 < rms(&tensor), "{} vs {}", rms(&channel), rms(&tensor));
    assert_eq!(Matrix::new(Format::Int8PerTensor, 0, 4, Channels::Cols, &[]).scales().len(), 0);
}

/// The CPU engine's unpacking loops (`Matrix::row`) equal the twin of
/// `w_load` (`Matrix::get`) bit for bit, in every format and channel axis, for
/// rows on word boundaries (the word-at-a-time loops) and rows that start
/// mid-word or mid-group; f16 includes subnormals, ±0 and the largest value.
#[test]
fn unpacked_rows_equal_the_twin_of_w_load() {
    for (rows, cols) in [(37, 13), (5, 64), (7, 40)] {
        let mut w = cases::random(rows * cols, 9);
        w[..7].copy_from_slice(&[
            6.0e-8,
            -6.1e-5,
            0.0,
            -0.0,
            65504.0,
            -1.0e-7,
            1.0 + 2f32.powi(-8),
        ]);
        for format in Format::ALL {
            for channels in [Channels::Rows, Channels::Cols] {
                let m = Matrix::new(format, rows, cols, channels, &w);
                let mut buf = Vec::new();
                for r in 0..rows {
                    let row: Vec<u32> = m.row(r, &mut buf).iter().map(|v| v.to_bits()).collect();
                    let want: Vec<u32> = (0..cols).map(|c| m.get(r * cols + c).to_bits()).collect();
                    assert_eq!(row, want, "{} {channels:?} {rows}x{cols} row {r}", format.name());
                }
            }
        }
    }
}

/// A shard of rows (how the GPU splits an embedding over bindings) holds
/// exactly the parent's values, in every format, at awkward widths; the
/// shard size is a multiple of 32 rows that fits the limit, all rows when
/// the matrix fits, and none when 32 rows do not.
#[test]
fn shards_of_rows_hold_the_parents_values() {
    for cols in [1, 13, 63, 65] {
        let rows = 1757;
        let w = cases::random(rows * cols, 11);
        for format in Format::ALL {
            let m = Matrix::new(format, rows, cols, Channels::Rows, &w);
            let limit = format.bytes(rows * cols) / 3;
            let per = m.shard_rows(limit).expect("32 rows fit a third");
            assert!(per.is_multiple_of(32) && format.bytes(per * cols) <= limit);
            let mut seen = 0;
            for r0 in (0..rows).step_by(per) {
                let r1 = (r0 + per).min(rows);
                let s = m.shard(r0, r1);
                assert!(s.words().len() as u64 * 4 <= limit, "{} cols {cols}", format.name());
                for i in 0..(r1 - r0) * cols {
                    let (got, want) = (s.get(i).to_bits(), m.get(r0 * cols + i).to_bits());
                    assert_eq!(got, want, "{} cols {cols} rows {r0}..{r1} at {i}", format.name());
                }
                seen += r1 - r0;
            }
            assert_eq!(seen, rows);
            assert_eq!(m.shard_rows(format.bytes(rows * cols)), Some(rows), "fits whole");
            assert_eq!(m.shard_rows(format.bytes(32 * cols) - 1), None, "under 32 rows: refused");
        }
    }
}

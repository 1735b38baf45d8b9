//! The CPU twins' fast paths for f16 weights (read straight from the words,
//! even and odd columns apart, and in wasm in explicit SIMD128) against their
//! path for any format, on an f32 matrix holding the same values: equal bit
//! for bit at awkward sizes and inputs, natively (`cpu_paths.rs`) and in
//! Chromium (`browser.rs`).

use decode_lab_engine::fast;
use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::kernels::{lm_head, matmul};
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;

/// An f16 matrix and the f32 matrix of its exact values; `lift`: the f16
/// one lifted ([`Matrix::lift_f16`], the CPU worker's form: no subnormal
/// operand), with 127.9375, the largest f16 a lifted matrix holds, in place
/// of 65504.
pub fn pair_as(
    rows: usize,
    cols: usize,
    channels: Channels,
    seed: u64,
    lift: bool,
) -> (Matrix, Matrix) {
    let mut w = cases::random(rows * cols, seed);
    // Subnormals (the smallest), both zeros and the largest f16 among the weights.
    let top = if lift { 63.96875 } else { 65504.0 };
    let specials = [6.0e-8, -6.1e-5, 0.0, -0.0, top, -1.0e-7];
    let n = specials.len().min(w.len());
    w[..n].copy_from_slice(&specials[..n]);
    let mut f16 = Matrix::new(Format::F16, rows, cols, channels, &w);
    let f32 = Matrix::new(Format::F32, rows, cols, channels, &f16.to_f32());
    if lift {
        assert!(f16.lift_f16(), "lifted");
        assert_eq!(bits(&f16.to_f32()), bits(&f32.to_f32()), "lifting keeps every value");
    }
    (f16, f32)
}

/// A weight of 64 or more cannot be lifted (its lifted bits would be
/// infinity or NaN to F16C): the matrix stays as it was.
pub fn lift_refuses_64() {
    let mut m = Matrix::new(
        Format::F16,
        2,
        4,
        Channels::Cols,
        &[0.5, 6.0e-8, 64.0, 1.0, 0.0, 0.0, 0.0, 0.0],
    );
    let before = m.clone();
    assert!(!m.lift_f16());
    assert_eq!(m, before);
    let mut below = Matrix::new(Format::F16, 1, 2, Channels::Cols, &[63.96875, -6.0e-8]);
    assert!(below.lift_f16() && below.is_lifted());
    // Over several pieces (65,536 words each) and a ragged tail: a weight of
    // 64 or more in any piece keeps the whole matrix as it was.
    let cols = 3 * 65_536 + 1757;
    let mut w = cases::random(2 * cols, 11);
    w[..3].copy_from_slice(&[6.0e-8, -0.0, 63.96875]);
    for at in [0, 2 * 65_536 + 1, 2 * cols - 1] {
        let mut over = w.clone();
        over[at] = -64.0;
        let mut m = Matrix::new(Format::F16, 2, cols, Channels::Cols, &over);
        let before = m.clone();
        assert!(!m.lift_f16(), "64 at {at}");
        assert_eq!(m, before, "64 at {at}");
    }
    let mut m = Matrix::new(Format::F16, 2, cols, Channels::Cols, &w);
    let values = m.to_f32();
    assert!(m.lift_f16() && m.is_lifted());
    assert_eq!(bits(&m.to_f32()), bits(&values), "lifting keeps every value");
}

/// Random inputs of `len`, and the same with their first values at and
/// beyond 2¹⁶ (where the f16 paths stop scaling inputs instead of weights)
/// and a subnormal.
pub fn inputs(len: usize, seed: u64) -> [Vec<f32>; 2] {
    let x = cases::random(len, seed);
    let mut big = x.clone();
    for (i, s) in [1.0e-40, 65_535.9, -1.0e5, 65_536.0].into_iter().enumerate() {
        big[i * len / 4] = s;
    }
    [x, big]
}

pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `matmul` with f16 weights gives the bits it gives with the same values in f32.
pub fn matmul_f16_equals_f32() {
    for m in [1, 2, 17, 33] {
        for k in [1, 3, 4, 5, 63, 65] {
            for n in [2, 6, 64, 130] {
                for lift in [false, true] {
                    let (w16, w32) = pair_as(k, n, Channels::Cols, (m * k * n) as u64, lift);
                    assert!(w16.f16_words().is_some(), "even n takes the fast path");
                    let bias = cases::random(n, 4);
                    for x in inputs(m * k, 3) {
                        let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
                        fast::matmul::run(&x, &w16, &bias, &mut a);
                        matmul::run_cpu(&x, &w32, &bias, &mut b);
                        assert_eq!(
                            bits(&a),
                            bits(&b),
                            "m {m} k {k} n {n} lift {lift} x[0] {}",
                            x[0]
                        );
                    }
                }
            }
        }
    }
}

/// `lm_head` with f16 weights gives the bits it gives with the same values in
/// f32, for one wanted row (a decode step) and two; on an AVX-512 core in
/// both copies of the lifted head's decode step (eight rows at a time where
/// the column panels are wide; 37 rows: a tail of five), and so a bf16
/// head too (the same wide loop).
pub fn lm_head_f16_equals_f32() {
    fast::parallel::with_wide_panels(lm_head_f16_equals_f32_here);
    fast::parallel::with_narrow_panels(lm_head_f16_equals_f32_here);
}

fn lm_head_f16_equals_f32_here() {
    for cols in [2, 6, 8, 14, 16, 64, 72, 770, 784] {
        // f16 as stored, f16 lifted, and bf16 of the same values (against
        // its own values in f32).
        for (lift, bf16) in [(false, false), (true, false), (false, true)] {
            let (w16, w32) = pair_as(37, cols, Channels::Rows, cols as u64, lift);
            let (w16, w32) = match bf16 {
                false => (w16, w32),
                true => {
                    let b16 = Matrix::new(Format::Bf16, 37, cols, Channels::Rows, &w32.to_f32());
                    let b32 = Matrix::new(Format::F32, 37, cols, Channels::Rows, &b16.to_f32());
                    (b16, b32)
                }
            };
            for n_out in [1, 2] {
                for x in inputs(3 * cols, 5) {
                    // x: (3, cols), row0 = 1; vocab_size 50, v0 = 7
                    let (mut a, mut b) = (vec![0.0; n_out * 50], vec![0.0; n_out * 50]);
                    fast::lm_head::run(&x, &w16, 7, 50, 1, n_out, &mut a);
                    lm_head::run_cpu(&x, &w32, 7, 50, 1, n_out, &mut b);
                    let at = &x[cols..][..2];
                    let what = format!(
                        "{} lift {lift} cols {cols} n_out {n_out} x {at:?}",
                        w16.format.name()
                    );
                    assert_eq!(bits(&a), bits(&b), "{what}");
                }
            }
        }
    }
}

/// `matmul` with an f16 matrix in column panels (the CPU worker's layout of
/// the blocks' matrices) gives the bits of the same values in f32: decode
/// steps (one row of x), prefills (a panel widened 64 rows at a time: k
/// past one and two such blocks), lifted or not, inputs scaled or widened.
pub fn matmul_in_panels_equals_f32() {
    for m in [1, 2, 17] {
        for k in [1, 3, 63, 65, 130] {
            for n in [32, 64, 160] {
                for lift in [false, true] {
                    let (mut w16, w32) = pair_as(k, n, Channels::Cols, (m * k + n) as u64, lift);
                    assert!(w16.into_panels() && w16.f16_panels().is_some());
                    assert_eq!(bits(&w16.to_f32()), bits(&w32.to_f32()), "panels keep every value");
                    let bias = cases::random(n, 6);
                    for x in inputs(m * k, 7) {
                        let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
                        fast::matmul::run(&x, &w16, &bias, &mut a);
                        matmul::run_cpu(&x, &w32, &bias, &mut b);
                        let what = format!("m {m} k {k} n {n} lift {lift} x[0] {}", x[0]);
                        assert_eq!(bits(&a), bits(&b), "{what}");
                    }
                }
            }
        }
    }
}

/// An f32 matrix in column panels (the CPU layout) gives the twin's bits
/// on the row-major matrix, decode steps and prefills (k across several of
/// the prefill's blocks of 64 rows), at awkward sizes.
pub fn f32_panels_give_the_twins_bits() {
    let sizes = [(1, 1, 32), (1, 63, 64), (1, 65, 160), (2, 3, 96), (17, 130, 64), (3, 1757, 96)];
    for (m, k, n) in sizes {
        let rows = Matrix::new(Format::F32, k, n, Channels::Cols, &cases::random(k * n, 21));
        let mut p = rows.clone();
        assert!(p.into_panels() && p.f32_panels().is_some());
        let bias = cases::random(n, 23);
        for x in [cases::random(m * k, 22), cases::random(1, 24).repeat(m * k)] {
            let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
            fast::matmul::run(&x, &p, &bias, &mut a);
            matmul::run_cpu(&x, &rows, &bias, &mut b);
            assert_eq!(bits(&a), bits(&b), "f32 panels m {m} k {k} n {n}");
        }
    }
}

/// Only an f32, f16 or bf16 matrix of whole panels (32 columns; int8's own
/// layout aside) is laid out in panels, once; its columns cut at panel
/// boundaries are panels of the same values.
pub fn panels_hold_the_matrix() {
    let values = cases::random(5 * 96, 8);
    for format in [Format::F32, Format::F16, Format::Bf16] {
        let rows = Matrix::new(format, 5, 96, Channels::Cols, &values);
        let mut p = rows.clone();
        assert!(p.into_panels() && !p.into_panels(), "laid out once");
        assert!(p.f16_words().is_none() && p.bf16_words().is_none(), "no row-major words");
        assert!(p.as_f32().is_none(), "no row-major values");
        assert!(p.cpu_only() && !rows.cpu_only() && p.int8_panels().is_none());
        assert_eq!(bits(&p.to_f32()), bits(&rows.to_f32()), "{}", format.name());
        let each: Vec<f32> = (0..5 * 96).map(|i| p.get(i)).collect();
        assert_eq!(bits(&each), bits(&rows.to_f32()), "{} element by element", format.name());
        for c in [0..32, 32..96, 0..96] {
            let cut = p.columns(c.clone()).unwrap();
            assert!(cut.f32_panels().is_some() == (format == Format::F32));
            assert!(cut.f16_panels().is_some() == (format == Format::F16));
            assert!(cut.bf16_panels().is_some() == (format == Format::Bf16));
            let want = rows
                .to_f32()
                .chunks_exact(96)
                .flat_map(|r| r[c.clone()].to_vec())
                .collect::<Vec<_>>();
            assert_eq!(bits(&cut.to_f32()), bits(&want), "{} columns {c:?}", format.name());
        }
        assert!(p.columns(16..48).is_none(), "not at a panel boundary");
    }
    let refused = [
        (Format::F16, 3, 48, Channels::Cols),
        (Format::Bf16, 3, 48, Channels::Cols),
        (Format::F32, 3, 48, Channels::Cols),
        (Format::Int4, 3, 64, Channels::Cols),
        (Format::Int8, 3, 48, Channels::Cols),
        (Format::Int8, 3, 64, Channels::Rows), // a scale per row: not a panel's columns
        (Format::F16, 0, 64, Channels::Cols),
    ];
    for (format, rows, cols, channels) in refused {
        let values = cases::random(rows * cols, 9);
        let mut m = Matrix::new(format, rows, cols, channels, &values);
        assert!(!m.into_panels(), "{} of {rows} x {cols}", format.name());
    }
    for format in [Format::Int8, Format::Int8PerTensor] {
        let rows = Matrix::new(format, 3, 64, Channels::Cols, &cases::random(3 * 64, 9));
        let mut m = rows.clone();
        assert!(m.into_panels() && m.int8_panels().is_some() && m.f16_panels().is_none());
        let cut = m.columns(32..64).unwrap();
        assert!(cut.int8_panels().is_some(), "an int8 panel's cut is a panel");
        let want: Vec<f32> =
            rows.to_f32().chunks_exact(64).flat_map(|r| r[32..].to_vec()).collect();
        assert_eq!(bits(&cut.to_f32()), bits(&want), "{} columns 32..64", format.name());
        assert!(m.columns(0..48).is_none(), "not at a panel boundary");
    }
    // Row-major, a cut must start every row on a word (an int4 group).
    let odd = Matrix::new(Format::F16, 3, 47, Channels::Cols, &cases::random(3 * 47, 9));
    assert!(odd.column_step().is_none(), "f16 rows of 47 columns");
    let int4 = Matrix::new(Format::Int4, 3, 48, Channels::Cols, &cases::random(3 * 48, 9));
    assert!(int4.column_step().is_none(), "int4 rows of one and a half groups");
}

/// The CPU engine's loops (`fast/`: k-outer streaming, panels, threads, SIMD)
/// give the plain twins' bits (`kernels::matmul`, `kernels::lm_head`: the
/// reference a reader checks by eye) in every weight format, as stored and in
/// the CPU layout, at awkward sizes.
pub fn fast_equals_the_plain_twins() {
    for format in Format::ALL {
        // Decode steps (m = 1) of whole int4 groups take the fused paths
        // (fast::matmul_quant), with rows past the last eight (k = 67, 9),
        // and an LM head of whole int4 groups (k = 64); prefills of whole
        // int4 groups (fast::matmul_quant::int4_prefill) within one block of
        // rows (k = 64) and across two and a tail (k = 130).
        for (m, k, n) in [
            (1, 1, 2),
            (3, 63, 65),
            (17, 65, 130),
            (2, 64, 96),
            (17, 130, 96),
            (1, 67, 96),
            (1, 9, 64),
            (1, 64, 96),
        ] {
            let values = cases::random(k * n, (k + n) as u64);
            let mut w = Matrix::new(format, k, n, Channels::Cols, &values);
            let bias = cases::random(n, 5);
            let x = cases::random(m * k, 6);
            for layout in ["as stored", "cpu layout"] {
                let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
                fast::matmul::run(&x, &w, &bias, &mut a);
                matmul::run_cpu(&x, &w, &bias, &mut b);
                assert_eq!(bits(&a), bits(&b), "matmul {} {m}x{k}x{n} {layout}", format.name());
                w.lift_f16();
                w.into_panels();
            }
            let head = Matrix::new(format, n, k, Channels::Rows, &values);
            let (rows, vocab) = (2.min(m), n + 9);
            let (mut a, mut b) = (vec![0.0; rows * vocab], vec![0.0; rows * vocab]);
            fast::lm_head::run(&x, &head, 4, vocab, m - rows, rows, &mut a);
            lm_head::run_cpu(&x, &head, 4, vocab, m - rows, rows, &mut b);
            assert_eq!(bits(&a), bits(&b), "lm_head {} {n}x{k}", format.name());
        }
    }
}

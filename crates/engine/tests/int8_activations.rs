//! The CPU engine's 8-bit activations (`--activations int8`,
//! `fast::int8_dot`): the quad panels hold the matrix; the AVX2 loops, the
//! portable ones (wasm's) and any number of threads give the bits of the
//! definition, written here again from the row-major matrix at awkward
//! sizes; and the products stay within the rounding of x to 8 bits of the
//! f32 path's. Its effect on a whole model: `formats.rs`.
#![cfg(not(target_arch = "wasm32"))]

use decode_lab_engine::fast::{self, int8_dot, parallel};
use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;
use decode_lab_engine::storage::quads::Dot8;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool").install(f)
}

/// `run`'s bits are `want` on every path the CPU engine may take: its own
/// pick; the portable loops (wasm's); AVX2's sums where it took AVX-512
/// VNNI's; VNNI's where it took AMX's tiles (m ≥ 4); VNNI's sums in
/// AVX-512's registers and in AVX2's, whatever the core (each where the CPU
/// has it); and three threads.
fn on_every_path(run: &(impl Fn() -> Vec<u32> + Sync), want: &[f32], what: &str) {
    let want = bits(want);
    assert_eq!(run(), want, "{what}");
    assert_eq!(parallel::without_avx2(run), want, "{what} portable");
    assert_eq!(parallel::without_avx512(run), want, "{what} avx2");
    assert_eq!(parallel::without_amx(run), want, "{what} vnni");
    assert_eq!(parallel::with_wide_panels(run), want, "{what} wide");
    assert_eq!(parallel::with_narrow_panels(run), want, "{what} narrow");
    assert_eq!(on_threads(3, run), want, "{what} threads");
}

/// The int8 field of element `i` of a row-major int8 matrix.
fn field(w: &Matrix, i: usize) -> i32 {
    i32::from(bytemuck::cast_slice::<u32, i8>(w.words())[i])
}

/// The scale of output `j` (a column's, a row's, or the matrix's one).
fn scale(w: &Matrix, j: usize) -> f32 {
    w.scales()[if w.format == Format::Int8PerTensor { 0 } else { j }]
}

/// The definition: `Σ_b d_b · isum_b` over x's blocks of 32, in order from
/// 0.0, each `isum_b` the integer sum of its products with `weight(r)`.
fn acc(x: &[f32], weight: impl Fn(usize) -> i32) -> f32 {
    let (qx, d) = int8_dot::quantise(x);
    let mut acc = 0.0f32;
    for (b, &db) in d.iter().enumerate() {
        let rows = 32 * b..x.len().min(32 * (b + 1));
        let isum: i32 = rows.map(|r| i32::from(qx[r]) * weight(r)).sum();
        acc += db * isum as f32;
    }
    acc
}

#[test]
fn quantised_inputs_round_to_the_nearest_step_of_their_block() {
    let x: Vec<f32> = cases::random(70, 3).iter().map(|v| v * 5.0).collect();
    let (q, d) = int8_dot::quantise(&x);
    assert_eq!((q.len(), d.len()), (72, 3), "padded to octs; a scale per block of 32");
    for (i, &v) in x.iter().enumerate() {
        let db = d[i / 32];
        assert!((f32::from(q[i]) * db - v).abs() <= db * 0.5001, "x[{i}] = {v}");
    }
    for (b, block) in x.chunks(32).enumerate() {
        let max = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert_eq!(d[b], max / 127.0);
        assert!(q[32 * b..][..block.len()].iter().any(|q| q.abs() == 127), "the largest is ±127");
    }
    assert_eq!(&q[70..], &[0, 0], "the padding is zeros");
    let (q, d) = int8_dot::quantise(&[0.0, f32::NAN, 0.0]);
    assert_eq!((q, d), (vec![0; 8], vec![0.0]), "zeros and NaN quantise to 0");
    // A block so small that its scale is subnormal and the inverse overflows:
    // held to ±127 (never −128, which the AVX2 sums cannot negate).
    let (q, _) = int8_dot::quantise(&[1e-39, -1e-39, 5e-40, 0.0]);
    assert_eq!(&q[..4], &[127, -127, 127, 0], "a subnormal scale's values");
}

/// x with its row `r` (of `cols`) so small that every block's scale is
/// subnormal, the inverse overflows and a SIMD quantiser must hand each
/// block to the definition: a head's logits (no bias) keep the difference.
fn with_tiny_row(mut x: Vec<f32>, cols: usize, r: usize) -> Vec<f32> {
    for v in &mut x[r * cols..][..cols] {
        *v *= 1e-39;
    }
    x
}

/// x (rows of `k` ≥ 1757) with a NaN in row 0's block 9, row 1's block
/// 16 so small that its scale is subnormal, row 2's block 21 holding
/// an infinity and row 0's block 30 zeros: each among whole blocks whose scales the AVX2 quantiser
/// finds eight at a time (it hands such a group to the definition).
fn with_awkward_blocks(mut x: Vec<f32>, k: usize) -> Vec<f32> {
    if k >= 1757 && x.len() >= 3 * k {
        x[9 * 32 + 3] = f32::NAN;
        for v in &mut x[k + 16 * 32..][..32] {
            *v *= 1e-39;
        }
        x[2 * k + 21 * 32 + 30] = f32::INFINITY;
        x[30 * 32..][..32].fill(0.0); // row 0's block 30: a scale of 0
    }
    x
}

#[test]
fn quad_panels_hold_the_matrix_and_only_int8_per_output_is_taken() {
    for format in [Format::Int8, Format::Int8PerTensor] {
        for (k, n) in [(1, 32), (3, 64), (65, 96), (130, 32)] {
            let rows = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 4));
            let mut q = rows.clone();
            assert!(q.use_int8_activations(Dot8::Quads) && q.cpu_only());
            assert_eq!(q.int8_activations(), Some(Dot8::Quads));
            assert_eq!(bits(&q.to_f32()), bits(&rows.to_f32()), "{} {k}x{n}", format.name());
            assert!(!q.clone().use_int8_activations(Dot8::Quads), "laid out once");
            assert!(!q.into_panels(), "quads are not column panels");
        }
    }
    let values = cases::random(4 * 64, 5);
    let refused = [
        (Format::F16, 64, Channels::Cols, Dot8::Quads),
        (Format::Int4, 64, Channels::Cols, Dot8::Quads),
        (Format::Int8, 64, Channels::Cols, Dot8::Octs),
        (Format::Int4, 48, Channels::Cols, Dot8::Octs), // not whole panels
        (Format::Int8, 64, Channels::Rows, Dot8::Quads), // a scale per input row
        (Format::Int8, 64, Channels::Cols, Dot8::Rows), // a scale per input column
        (Format::Int8, 48, Channels::Cols, Dot8::Quads), // not whole panels
    ];
    for (format, n, channels, dot) in refused {
        let mut w = Matrix::new(format, 4, n, channels, &values[..4 * n]);
        let before = w.clone();
        assert!(!w.use_int8_activations(dot), "{} {n} {channels:?} {dot:?}", format.name());
        assert_eq!(w, before, "nothing changed");
    }
    let mut panels = Matrix::new(Format::Int8, 4, 64, Channels::Cols, &values);
    assert!(panels.into_panels() && !panels.use_int8_activations(Dot8::Quads));
}

/// Decode steps and prefills over quad panels: the definition's bits in
/// AVX2, in the portable loops and on three threads, at awkward sizes (k
/// not a whole quad or block; m > 1).
#[test]
fn matmul_gives_the_definitions_bits_on_every_path() {
    for format in [Format::Int8, Format::Int8PerTensor] {
        for (m, k, n) in [
            (1, 1, 32),
            (1, 3, 64),
            (1, 63, 64),
            (1, 65, 160),
            (2, 130, 96),
            (17, 130, 64),
            (33, 1757, 160),
            (1, 768, 2304),
        ] {
            let rows = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 21));
            let mut w = rows.clone();
            assert!(w.use_int8_activations(Dot8::Quads));
            let x: Vec<f32> = cases::random(m * k, 22).iter().map(|v| v * 3.0).collect();
            let x = with_awkward_blocks(x, k);
            let bias = cases::random(n, 23);
            let mut want = vec![0.0; m * n];
            for (xr, or) in x.chunks_exact(k).zip(want.chunks_exact_mut(n)) {
                for (j, o) in or.iter_mut().enumerate() {
                    *o = bias[j] + acc(xr, |r| field(&rows, r * n + j)) * scale(&rows, j);
                }
            }
            let run = || {
                let mut out = vec![0.0; m * n];
                fast::matmul::run(&x, &w, &bias, &mut out);
                bits(&out)
            };
            let what = format!("{} m {m} k {k} n {n}", format.name());
            on_every_path(&run, &want, &what);
            // Within x's rounding of the f32 path: |Δx| ≤ d / 2 an input.
            let mut f32_path = vec![0.0; m * n];
            fast::matmul::run(&x, &rows, &bias, &mut f32_path);
            for (r, xr) in x.chunks_exact(k).enumerate() {
                if xr.iter().any(|v| !v.is_finite()) {
                    continue; // the f32 path's sum is NaN there
                }
                let (_, d) = int8_dot::quantise(xr);
                for j in 0..n {
                    let bound: f32 =
                        (0..k).map(|i| d[i / 32] * 0.5 * rows.get(i * n + j).abs()).sum();
                    let (got, f) = (want[r * n + j], f32_path[r * n + j]);
                    assert!((got - f).abs() <= bound * 1.01 + 1e-5, "{what} ({r}, {j})");
                }
            }
        }
    }
}

/// int4 in oct panels: every value held (fields and their scales), and its
/// decode steps and prefills the definition's bits on every path: each
/// panel's input scaled by its rows' group scales, quantised, multiplied in
/// integers (k not a whole oct or block; a NaN input and an infinite one).
#[test]
fn int4_matmul_gives_the_definitions_bits_on_every_path() {
    for (m, k, n) in [
        (1, 1, 32),
        (1, 7, 64),
        (1, 63, 64),
        (1, 65, 160),
        (5, 130, 96),
        (17, 40, 64),
        (33, 1757, 96),
        (1, 768, 2304),
    ] {
        let rows = Matrix::new(Format::Int4, k, n, Channels::Cols, &cases::random(k * n, 31));
        let mut w = rows.clone();
        assert!(w.use_int8_activations(Dot8::Octs) && w.cpu_only());
        assert_eq!(bits(&w.to_f32()), bits(&rows.to_f32()), "octs hold int4 {k}x{n}");
        let mut x: Vec<f32> = cases::random(m * k, 32).iter().map(|v| v * 3.0).collect();
        if k == 130 {
            (x[5], x[k + 40]) = (f32::NAN, f32::INFINITY);
        }
        let x = with_awkward_blocks(x, k);
        let bias = cases::random(n, 33);
        let mut want = vec![0.0; m * n];
        for (xr, or) in x.chunks_exact(k).zip(want.chunks_exact_mut(n)) {
            for (j, o) in or.iter_mut().enumerate() {
                // The group scale of (r, j) and the field: the value is their product.
                let scale = |r: usize| rows.scales()[(r * n + j) / 32];
                let y: Vec<f32> = (0..k).map(|r| xr[r] * scale(r)).collect();
                let field = |r: usize| (rows.get(r * n + j) / scale(r)).round() as i32;
                *o = bias[j] + acc(&y, field);
            }
        }
        let run = || {
            let mut out = vec![0.0; m * n];
            fast::matmul::run(&x, &w, &bias, &mut out);
            bits(&out)
        };
        let what = format!("int4 m {m} k {k} n {n}");
        on_every_path(&run, &want, &what);
    }
}

/// The int8 head (a scale per row or one; its quad panels hold it): the
/// definition's bits in AVX2, the portable loops and on three threads, at
/// rows and widths that are not whole panels or quads, only its shard's
/// logits written.
#[test]
fn lm_head_gives_the_definitions_bits_on_every_path() {
    for format in [Format::Int8, Format::Int8PerTensor] {
        // (3001, 200): enough work that three threads split the rows mid-panel.
        for (rows, cols) in [(301, 96), (301, 130), (1757, 64), (3001, 200)] {
            let values = cases::random(rows * cols, 15);
            let plain = Matrix::new(format, rows, cols, Channels::Rows, &values);
            let mut head = plain.clone();
            assert!(head.use_int8_activations(Dot8::Rows) && head.cpu_only());
            assert!(head.int8_head_quads().is_some(), "an int8 head in head quads");
            assert_eq!(bits(&head.to_f32()), bits(&plain.to_f32()), "head quads hold the head");
            let x = with_tiny_row(cases::random(3 * cols, 16), cols, 2);
            let (vocab, v0) = (rows + 200, 100);
            let mut want = vec![f32::NAN; 2 * vocab]; // rows 1 and 2 of x
            for (r, xr) in x.chunks_exact(cols).skip(1).enumerate() {
                for v in 0..rows {
                    let a = acc(xr, |i| field(&plain, v * cols + i));
                    want[r * vocab + v0 + v] = a * scale(&plain, v);
                }
            }
            let run = || {
                let mut logits = vec![f32::NAN; 2 * vocab];
                fast::lm_head::run(&x, &head, v0, vocab, 1, 2, &mut logits);
                bits(&logits)
            };
            let what = format!("{} head {rows}x{cols}", format.name());
            on_every_path(&run, &want, &what);
        }
    }
}

/// An int4 head (groups of 32 along its rows, as Q4_0's) in head oct
/// panels, every value held: each block's step `acc + (d_b · s(v, b)) ·
/// isum_b`, the same bits in AVX2, the portable loops and on three threads
/// (rows not whole panels, split mid-panel); a head whose rows are not
/// whole groups is refused (it keeps the f32 path).
#[test]
fn int4_lm_head_gives_the_definitions_bits_on_every_path() {
    for (rows, cols) in [(301, 96), (1757, 64), (5, 768), (3001, 256)] {
        let plain =
            Matrix::new(Format::Int4, rows, cols, Channels::Rows, &cases::random(rows * cols, 41));
        let mut head = plain.clone();
        assert!(head.use_int8_activations(Dot8::Rows) && head.cpu_only());
        assert!(head.int4_head_octs().is_some(), "an int4 head in head octs");
        assert_eq!(bits(&head.to_f32()), bits(&plain.to_f32()), "head octs hold the head");
        let x: Vec<f32> = cases::random(3 * cols, 42).iter().map(|v| v * 2.0).collect();
        let x = with_tiny_row(x, cols, 2);
        let (vocab, v0) = (rows + 200, 100);
        let mut want = vec![f32::NAN; 2 * vocab]; // rows 1 and 2 of x
        for (r, xr) in x.chunks_exact(cols).skip(1).enumerate() {
            let (qx, d) = int8_dot::quantise(xr);
            for v in 0..rows {
                let mut acc = 0.0f32;
                for (b, &db) in d.iter().enumerate() {
                    let s = plain.scales()[(v * cols) / 32 + b];
                    let field = |i: usize| (plain.get(v * cols + i) / s).round() as i32;
                    let isum: i32 =
                        (32 * b..32 * (b + 1)).map(|i| i32::from(qx[i]) * field(i)).sum();
                    acc += (db * s) * isum as f32;
                }
                want[r * vocab + v0 + v] = acc;
            }
        }
        let run = || {
            let mut logits = vec![f32::NAN; 2 * vocab];
            fast::lm_head::run(&x, &head, v0, vocab, 1, 2, &mut logits);
            bits(&logits)
        };
        let what = format!("int4 head {rows}x{cols}");
        on_every_path(&run, &want, &what);
    }
    let mut odd = Matrix::new(Format::Int4, 4, 40, Channels::Rows, &cases::random(160, 43));
    assert!(!odd.use_int8_activations(Dot8::Rows), "groups across rows");
}

/// A second worker's part (`cpu::coworker`): columns cut from quad and oct
/// panels, and head rows cut from head panels (the last one partly past the
/// end), hold the same values, and their products give the whole
/// product's bits for those outputs.
#[test]
fn cut_parts_hold_their_values_and_give_the_whole_products_bits() {
    let (k, n, m) = (65, 96, 3);
    let x: Vec<f32> = cases::random(m * k, 31).iter().map(|v| v * 2.0).collect();
    let bias = cases::random(n, 32);
    for (format, dot) in [
        (Format::Int8, Dot8::Quads),
        (Format::Int8PerTensor, Dot8::Quads),
        (Format::Int4, Dot8::Octs),
    ] {
        let mut w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 33));
        assert!(w.use_int8_activations(dot));
        let mut whole = vec![0.0; m * n]; // (m, n)
        fast::matmul::run(&x, &w, &bias, &mut whole);
        let c = 32..96;
        let cut = w.columns(c.clone()).expect("whole panels");
        assert_eq!(cut.int8_activations(), Some(dot));
        let want: Vec<f32> =
            w.to_f32().chunks_exact(n).flat_map(|r| r[c.clone()].to_vec()).collect();
        assert_eq!(bits(&cut.to_f32()), bits(&want), "{} values", format.name());
        let mut part = vec![0.0; m * c.len()]; // (m, 64)
        fast::matmul::run(&x, &cut, &bias[c.clone()], &mut part);
        let want: Vec<f32> = whole.chunks_exact(n).flat_map(|r| r[c.clone()].to_vec()).collect();
        assert_eq!(bits(&part), bits(&want), "{} products", format.name());
        assert!(w.columns(16..96).is_none(), "not on a panel");
    }
    let (vocab, e) = (70, 64);
    let x = cases::random(m * e, 34);
    for format in [Format::Int8, Format::Int8PerTensor, Format::Int4] {
        let mut head = Matrix::new(format, vocab, e, Channels::Rows, &cases::random(vocab * e, 35));
        assert!(head.use_int8_activations(Dot8::Rows));
        let mut whole = vec![0.0; m * vocab]; // (m, vocab)
        fast::lm_head::run(&x, &head, 0, vocab, 0, m, &mut whole);
        let (r0, r1) = (32, vocab);
        let shard = head.shard(r0, r1);
        let want = head.to_f32()[r0 * e..].to_vec();
        assert_eq!(bits(&shard.to_f32()), bits(&want), "{} head values", format.name());
        let mut part = vec![0.0; m * (r1 - r0)]; // (m, 38)
        fast::lm_head::run(&x, &shard, 0, r1 - r0, 0, m, &mut part);
        let want: Vec<f32> = whole.chunks_exact(vocab).flat_map(|r| r[r0..].to_vec()).collect();
        assert_eq!(bits(&part), bits(&want), "{} head logits", format.name());
    }
}

//! The CPU twins' fast paths for f16 weights (read straight from the words,
//! even and odd columns apart) against their path for any format, on an f32
//! matrix holding the same values: equal bit for bit at awkward sizes, so the
//! CPU engine's numbers do not depend on how a checkpoint stores its weights.
//! And the same kernels on one thread and on several: equal bit for bit.
#![cfg(not(target_arch = "wasm32"))]

use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::kernels::format::{Channels, Format};
use decode_lab_engine::kernels::matrix::Matrix;
use decode_lab_engine::kernels::{lm_head, matmul};

#[path = "shared/portable_forward.rs"]
mod portable_forward;

/// An f16 matrix and the f32 matrix of its exact values.
fn pair(rows: usize, cols: usize, channels: Channels, seed: u64) -> (Matrix, Matrix) {
    let mut w = cases::random(rows * cols, seed);
    // Subnormals, both zeros and the largest f16 among the weights.
    let specials = [6.0e-8, -6.1e-5, 0.0, -0.0, 65504.0, -1.0e-7];
    let n = specials.len().min(w.len());
    w[..n].copy_from_slice(&specials[..n]);
    let f16 = Matrix::new(Format::F16, rows, cols, channels, &w);
    let f32 = Matrix::new(Format::F32, rows, cols, channels, &f16.to_f32());
    (f16, f32)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn matmul_f16_path_equals_the_f32_path_bit_for_bit() {
    for m in [1, 2, 17, 33] {
        for k in [1, 3, 4, 5, 63, 65] {
            for n in [2, 6, 64, 130] {
                let (w16, w32) = pair(k, n, Channels::Cols, (m * k * n) as u64);
                assert!(w16.f16_words().is_some(), "even n takes the fast path");
                let x = cases::random(m * k, 3);
                let bias = cases::random(n, 4);
                let (mut a, mut b) = (vec![0.0; m * n], vec![0.0; m * n]);
                matmul::run_cpu(&x, &w16, &bias, &mut a);
                matmul::run_cpu(&x, &w32, &bias, &mut b);
                assert_eq!(bits(&a), bits(&b), "m {m} k {k} n {n}");
            }
        }
    }
}

#[test]
fn lm_head_f16_path_equals_the_f32_path_bit_for_bit() {
    for cols in [2, 6, 8, 14, 64, 770] {
        let rows = 37;
        let (w16, w32) = pair(rows, cols, Channels::Rows, cols as u64);
        let x = cases::random(3 * cols, 5); // (3, cols): row0 = 1, two rows wanted
        let (mut a, mut b) = (vec![0.0; 2 * 50], vec![0.0; 2 * 50]); // vocab_size 50, v0 = 7
        lm_head::run_cpu(&x, &w16, 7, 50, 1, 2, &mut a);
        lm_head::run_cpu(&x, &w32, 7, 50, 1, 2, &mut b);
        assert_eq!(bits(&a), bits(&b), "cols {cols}");
        // Only the shard's logits are written; each is x · w to f32 precision.
        for r in 0..2 {
            for v in 0..50 {
                let got = a[r * 50 + v];
                if !(7..7 + rows).contains(&v) {
                    assert_eq!(got, 0.0);
                    continue;
                }
                let row = &w32.to_f32()[(v - 7) * cols..][..cols];
                let xr = &x[(1 + r) * cols..][..cols];
                let want: f64 = xr.iter().zip(row).map(|(&a, &b)| a as f64 * b as f64).sum();
                let scale: f64 =
                    xr.iter().zip(row).map(|(&a, &b)| (a as f64 * b as f64).abs()).sum();
                assert!((got as f64 - want).abs() <= 1e-6 * scale.max(1.0), "cols {cols} v {v}");
            }
        }
    }
}

/// `f` on a pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool").install(f)
}

#[test]
fn matmul_and_lm_head_give_the_same_bits_on_any_number_of_threads() {
    for format in Format::ALL {
        for (m, k, n) in [(1, 513, 1757), (1, 512, 1758), (5, 129, 2050)] {
            let w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 7));
            let (x, bias) = (cases::random(m * k, 8), cases::random(n, 9));
            let run = |threads| {
                on_threads(threads, || {
                    let mut out = vec![0.0; m * n];
                    matmul::run_cpu(&x, &w, &bias, &mut out);
                    bits(&out)
                })
            };
            let one = run(1);
            assert_eq!(one, run(2), "{} matmul {m}x{k}x{n}", format.name());
            assert_eq!(one, run(3), "{} matmul {m}x{k}x{n}", format.name());
        }
        let (rows, cols) = (1757, 514);
        let head = Matrix::new(format, rows, cols, Channels::Rows, &cases::random(rows * cols, 10));
        let x = cases::random(3 * cols, 11);
        let run = |threads| {
            on_threads(threads, || {
                let mut logits = vec![0.0; 2 * 2000]; // vocab_size 2000, v0 = 200
                lm_head::run_cpu(&x, &head, 200, 2000, 1, 2, &mut logits);
                bits(&logits)
            })
        };
        let one = run(1);
        assert_eq!(one, run(2), "{} lm_head", format.name());
        assert_eq!(one, run(3), "{} lm_head", format.name());
    }
}

/// Natively on x86-64 the twins run AVX2 copies of their loops where the CPU
/// has it; they give the bits of the portable loops (the ones wasm runs).
#[test]
fn avx2_loops_give_the_bits_of_the_portable_loops() {
    use decode_lab_engine::kernels::parallel;
    if !parallel::avx2() {
        return; // nothing to compare on this CPU
    }
    for format in [Format::F32, Format::F16, Format::Int8, Format::Int4] {
        let (m, k, n) = (17, 67, 258);
        let w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 12));
        let (x, bias) = (cases::random(m * k, 13), cases::random(n, 14));
        let head = Matrix::new(format, 301, 130, Channels::Rows, &cases::random(301 * 130, 15));
        let hx = cases::random(2 * 130, 16);
        let run = || {
            let mut out = vec![0.0; m * n];
            matmul::run_cpu(&x, &w, &bias, &mut out);
            let mut logits = vec![0.0; 2 * 301];
            lm_head::run_cpu(&hx, &head, 0, 301, 0, 2, &mut logits);
            (bits(&out), bits(&logits))
        };
        let wide = run();
        assert_eq!(wide, parallel::without_avx2(run), "{}", format.name());
    }
}

/// The whole CPU forward pass gives the bits it gives in wasm (`browser.rs`
/// checks the same fingerprint in Chromium).
#[test]
fn cpu_logits_are_bit_identical_to_wasm() {
    let config = include_str!("../../../tests/fixtures/golden/tiny_odd/config.json");
    let weights = include_bytes!("../../../tests/fixtures/golden/tiny_odd/model.safetensors");
    let fingerprint = portable_forward::forward_fingerprint(config, weights);
    assert_eq!(fingerprint, portable_forward::FORWARD_FINGERPRINT);
}

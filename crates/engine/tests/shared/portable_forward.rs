//! The CPU engine's logits as fingerprints that the native tests
//! (`cpu_paths.rs`) and the same tests in Chromium (`browser.rs`) share:
//! natively the loops run on several threads and in AVX2's eight lanes, in
//! wasm on one thread in SIMD128's four; every logit must have the same bits.
//! One for the formats' own paths, one for int8 and int4 multiplying 8-bit
//! activations (`fast::int8_dot`: natively its AVX2 loops, in wasm the
//! portable ones, which the page's worker runs in the quantization lesson).

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::fast;
use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::model::Model;
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;
use decode_lab_engine::storage::quads::Dot8;
use decode_lab_engine::Wanted;

/// [`acts8_fingerprint`] as computed natively.
pub const ACTS8_FINGERPRINT: u64 = 15_556_010_831_858_752_014;

/// [`forward_fingerprint`] as computed natively.
pub const FORWARD_FINGERPRINT: u64 = 4_642_638_611_679_391_815;

/// The fixture models it runs: `tiny_odd`, and `wide_head`, whose rows of
/// 72 values end in a part of a SIMD chunk (the kernels' tail loops).
const MODELS: [(&str, &[u8]); 2] = [
    (
        include_str!("../../../../tests/fixtures/golden/tiny_odd/config.json"),
        include_bytes!("../../../../tests/fixtures/golden/tiny_odd/model.safetensors"),
    ),
    (
        include_str!("../../../../tests/fixtures/golden/wide_head/config.json"),
        include_bytes!("../../../../tests/fixtures/golden/wide_head/model.safetensors"),
    ),
];

/// Every bit of every logit of a 17-token prefill (all rows) and 8 decode
/// steps of each of [`MODELS`], with the weights in f32 and in f16 (each
/// format's own path).
pub fn forward_fingerprint() -> u64 {
    let mut bits = Vec::new();
    for (config, weights) in MODELS {
        let model = Model::from_bytes(config, weights).expect("model loads");
        let vocab = model.config.vocab_size as u32;
        let prompt: Vec<u32> = (0..17).map(|i| i * 37 % vocab).collect();
        for format in [Format::F32, Format::F16] {
            let mut session = CpuSession::new(Arc::new(model.to_format(format).expect("fits f16")));
            let mut logits = session.forward(&prompt, Wanted::All).expect("prefill");
            for t in 0..8u32 {
                logits.extend(session.forward(&[t * 101 % vocab], Wanted::Last).expect("decode"));
            }
            bits.extend(logits.iter().map(|l| u64::from(l.to_bits())));
        }
    }
    fnv(&bits)
}

/// Every bit of every logit of a 37-token prefill (all rows: the AVX2
/// loops' row pairs and a lone last row) and 6 decode steps of
/// `untied_f16` (64 wide: its matrices whole panels; an untied head of 515
/// rows, a part panel at its end) in int8-tensor, int8 and int4, each
/// multiplying 8-bit activations.
pub fn acts8_fingerprint() -> u64 {
    let config = include_str!("../../../../tests/fixtures/golden/untied_f16/config.json");
    let weights = include_bytes!("../../../../tests/fixtures/golden/untied_f16/model.safetensors");
    let model = Model::from_bytes(config, weights).expect("model loads");
    let vocab = model.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..37).map(|i| i * 53 % vocab).collect();
    let mut bits = Vec::new();
    for format in [Format::Int8PerTensor, Format::Int8, Format::Int4] {
        let mut acts8 = model.to_format(format).expect("quantises");
        assert!(acts8.weights.use_int8_activations(), "{format:?} takes 8-bit activations");
        acts8.weights.use_cpu_layout();
        let mut session = CpuSession::new(Arc::new(acts8));
        let mut logits = session.forward(&prompt, Wanted::All).expect("prefill");
        for t in 0..6u32 {
            logits.extend(session.forward(&[t * 89 % vocab], Wanted::Last).expect("decode"));
        }
        bits.extend(logits.iter().map(|l| u64::from(l.to_bits())));
    }
    fnv(&bits)
}

/// [`acts8_kernel_fingerprint`] as computed natively.
pub const ACTS8_KERNEL_FINGERPRINT: u64 = 15_102_679_098_157_242_919;

/// Every bit of 8-bit-activation matmuls at awkward sizes (k not a whole
/// quad, oct or block; one row, pairs and a lone last row; a NaN and an
/// infinite input; blocks of zeros and of a subnormal scale among the
/// quantisers' groups) in int8-tensor, int8 (quad panels) and int4 (oct
/// panels): natively AVX2's loops, in wasm SIMD128's.
pub fn acts8_kernel_fingerprint() -> u64 {
    let mut bits = Vec::new();
    for format in [Format::Int8PerTensor, Format::Int8, Format::Int4] {
        let dot = if format == Format::Int4 { Dot8::Octs } else { Dot8::Quads };
        for (m, k, n) in [
            (1, 1, 32),
            (1, 7, 64),
            (2, 63, 32),
            (3, 65, 64),
            (1, 100, 96),
            (5, 130, 32),
            (4, 300, 32),
        ] {
            let values = cases::random(k * n, (k * n) as u64);
            let mut w = Matrix::new(format, k, n, Channels::Cols, &values);
            assert!(w.use_int8_activations(dot), "{format:?} {k}x{n}");
            let mut x: Vec<f32> = cases::random(m * k, 7).iter().map(|v| v * 3.0).collect();
            if k == 130 {
                (x[5], x[k + 40]) = (f32::NAN, f32::INFINITY);
            }
            if k == 300 {
                // Among blocks whose scales the quantisers find together: a
                // block of zeros, one whose scale is subnormal, a NaN and an
                // infinity.
                x[32..64].fill(0.0);
                x[k + 160..k + 192].iter_mut().for_each(|v| *v *= 1e-39);
                (x[2 * k + 200], x[3 * k + 260]) = (f32::NAN, f32::INFINITY);
            }
            let bias = cases::random(n, 9);
            let mut out = vec![0.0; m * n];
            fast::matmul::run(&x, &w, &bias, &mut out);
            bits.extend(out.iter().map(|o| u64::from(o.to_bits())));
        }
    }
    fnv(&bits)
}

/// FNV-1a over the 64-bit words.
fn fnv(bits: &[u64]) -> u64 {
    bits.iter().fold(0xcbf2_9ce4_8422_2325, |h, &w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
}

//! The CPU engine's logits as a fingerprint that the native tests
//! (`cpu_paths.rs`) and the same test in Chromium (`browser.rs`) share:
//! natively the loops run on several threads and in AVX2's eight lanes, in
//! wasm on one thread in SIMD128's four; every logit must have the same bits.

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::kernels::format::Format;
use decode_lab_engine::model::Model;
use decode_lab_engine::Wanted;

/// [`forward_fingerprint`] as computed natively.
pub const FORWARD_FINGERPRINT: u64 = 926_998_534_014_612_670;

/// Every bit of every logit of a 17-token prefill (all rows) and 8 decode
/// steps, with the model's weights in f32 and in f16 (each format's own path).
pub fn forward_fingerprint(config: &str, weights: &[u8]) -> u64 {
    let model = Model::from_bytes(config, weights).expect("model loads");
    let prompt: Vec<u32> = (0..17).map(|i| i * 37 % model.config.vocab_size as u32).collect();
    let mut bits = Vec::new();
    for format in [Format::F32, Format::F16] {
        let mut session = CpuSession::new(Arc::new(model.to_format(format).expect("fits f16")));
        let mut logits = session.forward(&prompt, Wanted::All).expect("prefill");
        for t in 0..8u32 {
            logits.extend(session.forward(&[t * 101], Wanted::Last).expect("decode"));
        }
        bits.extend(logits.iter().map(|l| u64::from(l.to_bits())));
    }
    // FNV-1a over the 64-bit words.
    bits.iter().fold(0xcbf2_9ce4_8422_2325, |h, &w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
}

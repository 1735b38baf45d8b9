//! Expected values that the native tests (`sample.rs`) and the same tests in
//! Chromium (`browser.rs`) share: the sampler must give the same bits on both.

use decode_lab_engine::sample::{explain, Settings};

/// 20 draws from logits [3, 2, 1, 0.5, 0.1] at T = 1 with seed 42.
pub const EXPECTED_DRAWS_SEED_42: [u32; 20] =
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 1, 1, 0, 0, 1, 0, 0];

/// [`explanation_fingerprint`] as computed natively.
pub const EXPLANATION_FINGERPRINT: u64 = 14_902_435_712_795_492_728;

/// A fingerprint of every bit of a 50,257-token explanation (all stages, all
/// entropies): the probabilities themselves, not just the draws, must be
/// identical natively and in wasm.
pub fn explanation_fingerprint() -> u64 {
    let logits: Vec<f32> =
        (0..50_257u32).map(|i| ((i * 7919 % 1000) as f32 / 100.0) - 5.0).collect();
    let history: Vec<u32> = (0..64).map(|i| i * 389).collect();
    let settings = Settings {
        temperature: 0.7,
        top_p: 0.9,
        min_p: 0.01,
        repetition_penalty: 1.2,
        ..Settings::default()
    };
    let e = explain(&logits, &history, &settings).unwrap();
    let mut bits = e.raw_probs.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
    bits.push(e.raw_entropy_bits.to_bits());
    for s in &e.stages {
        bits.extend(s.probs.iter().map(|p| p.to_bits()));
        bits.extend([s.entropy_bits.to_bits(), s.kept_mass.to_bits(), s.kept_count as u64]);
    }
    // FNV-1a over the 64-bit words.
    bits.iter().fold(0xcbf2_9ce4_8422_2325, |h, &w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
}

//! Choosing the next token from logits, with a seeded, portable generator:
//! ChaCha20 has a documented, platform-independent stream, so the same seed
//! draws the same tokens natively and in wasm. (The full pipeline of
//! processors and cuts builds on this.)

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::{EngineError, Result};

/// Greedy (temperature 0) or temperature sampling, seeded.
pub struct Sampler {
    temperature: f32,
    rng: ChaCha20Rng,
}

impl Sampler {
    /// A sampler at `temperature` (0 = greedy). Negative or non-finite values are refused.
    pub fn new(temperature: f32, seed: u64) -> Result<Sampler> {
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(EngineError::Setting(format!(
                "temperature must be a number ≥ 0, got {temperature}"
            )));
        }
        Ok(Sampler {
            temperature,
            rng: ChaCha20Rng::seed_from_u64(seed),
        })
    }

    /// The next token id.
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.temperature == 0.0 {
            return argmax(logits);
        }
        let probs = softmax(logits, self.temperature);
        // 53 random bits → a uniform f64 in [0, 1), identical on every platform.
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut cum = 0.0f64;
        for (i, &p) in probs.iter().enumerate() {
            cum += p;
            if u < cum {
                return i as u32;
            }
        }
        // Rounding left u above the final sum: take the last token with mass.
        probs.iter().rposition(|&p| p > 0.0).unwrap_or(0) as u32
    }
}

/// Index of the largest logit; the lowest id wins ties. NaN never wins.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] || logits[best].is_nan() {
            best = i;
        }
    }
    best as u32
}

/// softmax(logits / temperature) in f64, the max subtracted first so nothing overflows.
pub fn softmax(logits: &[f32], temperature: f32) -> Vec<f64> {
    let t = f64::from(temperature);
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut probs: Vec<f64> = logits
        .iter()
        .map(|&v| ((v as f64 - max) / t).exp())
        .collect();
    let sum: f64 = probs.iter().sum();
    probs.iter_mut().for_each(|p| *p /= sum);
    probs
}

//! How far a change of weights moves the model, measured on a text: the
//! next-token distributions of a reference model and a variant (f32 and int8,
//! say) at every position of the text, compared position by position. The
//! quantization lesson and the format tests both read these figures.
//!
//! A text longer than the context is scored in windows of `n_positions`
//! tokens advancing by half a context (as the model card's held-out figures
//! are): each window's first half only warms the cache up, except in the
//! first window, so every prediction after the first token is scored once
//! with at least half a context behind it.

use crate::error::{EngineError, Result};
use crate::sample::argmax;

/// One window of a scored text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First token of the window.
    pub start: usize,
    /// Tokens run through the model.
    pub len: usize,
    /// First position (within the window) whose prediction is scored.
    pub scored_from: usize,
}

/// The windows covering `n_tokens` tokens with a context of `n_ctx`.
pub fn windows(n_tokens: usize, n_ctx: usize) -> Vec<Window> {
    let stride = (n_ctx / 2).max(1);
    let mut out = vec![Window { start: 0, len: n_tokens.min(n_ctx), scored_from: 0 }];
    // The last row of a window predicts the token after it, which the next
    // window scores; so a window ends where the next starts being scored.
    let mut start = 0;
    while start + n_ctx < n_tokens {
        start += stride;
        let len = (n_tokens - start).min(n_ctx);
        out.push(Window { start, len, scored_from: n_ctx - stride - 1 });
    }
    out
}

/// Figures of a variant against the reference over the scored positions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Predictions compared.
    pub positions: usize,
    /// Mean KL(reference ‖ variant) of the next-token distribution, in nats.
    pub kl_mean: f64,
    /// Its 99.9th percentile (nearest rank).
    pub kl_p999: f64,
    /// Share of positions whose most likely token is the same (0..=1).
    pub same_top1: f64,
    /// Root mean square of p_variant − p_reference over every (position, token).
    pub rms_dp: f64,
    /// The variant's mean cross-entropy on the text's next tokens, in nats.
    pub nats_per_token: f64,
    /// The same for the reference.
    pub reference_nats_per_token: f64,
    /// Bytes of the tokens whose predictions were scored.
    pub bytes: usize,
}

impl Drift {
    /// Bits per byte of the variant over the scored tokens (its total nats /
    /// ln 2 / their bytes: a figure independent of the tokenizer). Over the
    /// bytes scored so far, not the whole text's: a run stopped midway, or
    /// still going, reads the same rate as a whole one.
    pub fn bits_per_byte(&self) -> f64 {
        self.nats_per_token * self.positions as f64
            / std::f64::consts::LN_2
            / self.bytes.max(1) as f64
    }
}

/// Collects per-position comparisons; [`finish`](Self::finish) gives the [`Drift`].
#[derive(Debug, Default, Clone)]
pub struct DriftAcc {
    kls: Vec<f64>,
    same_top1: usize,
    sq_dp: f64,
    entries: usize,
    nats: f64,
    reference_nats: f64,
    bytes: usize,
}

impl DriftAcc {
    /// One position: both models' logits over the vocabulary, the token that
    /// came next and its length in bytes.
    pub fn add(&mut self, reference: &[f32], variant: &[f32], next: u32, next_bytes: usize) {
        let (lp, lq) = (log_softmax(reference), log_softmax(variant));
        let mut kl = 0.0;
        for (&a, &b) in lp.iter().zip(&lq) {
            let (p, q) = (libm::exp(a), libm::exp(b));
            if p > 0.0 {
                kl += p * (a - b);
            }
            self.sq_dp += (q - p) * (q - p);
        }
        self.kls.push(kl.max(0.0));
        self.same_top1 += usize::from(argmax(reference) == argmax(variant));
        self.entries += lp.len();
        self.nats -= lq[next as usize];
        self.reference_nats -= lp[next as usize];
        self.bytes += next_bytes;
    }

    /// Takes in another accumulator's positions (a window scored apart).
    pub fn merge(&mut self, other: DriftAcc) {
        self.kls.extend(other.kls);
        self.same_top1 += other.same_top1;
        self.sq_dp += other.sq_dp;
        self.entries += other.entries;
        self.nats += other.nats;
        self.reference_nats += other.reference_nats;
        self.bytes += other.bytes;
    }

    pub fn finish(mut self) -> Drift {
        let n = self.kls.len().max(1) as f64;
        self.kls.sort_by(f64::total_cmp);
        let rank =
            ((0.999 * self.kls.len() as f64).ceil() as usize).clamp(1, self.kls.len().max(1));
        Drift {
            positions: self.kls.len(),
            kl_mean: self.kls.iter().sum::<f64>() / n,
            kl_p999: self.kls.get(rank - 1).copied().unwrap_or(0.0),
            same_top1: self.same_top1 as f64 / n,
            rms_dp: (self.sq_dp / self.entries.max(1) as f64).sqrt(),
            nats_per_token: self.nats / n,
            reference_nats_per_token: self.reference_nats / n,
            bytes: self.bytes,
        }
    }
}

/// Compares variants of a model with the reference over `tokens`, window by
/// window; `logits(window)` returns the logits of every row of the window,
/// each `(len, vocab_size)` from an empty cache: the reference's first, then
/// each variant's; `bytes_of(token)` is a token's length in bytes. One
/// [`Drift`] per variant, in order.
pub fn drifts(
    tokens: &[u32],
    n_ctx: usize,
    vocab_size: usize,
    bytes_of: impl Fn(u32) -> usize,
    mut logits: impl FnMut(&[u32]) -> Result<Vec<Vec<f32>>>,
) -> Result<Vec<Drift>> {
    if tokens.len() < 2 {
        return Err(EngineError::NoTokens);
    }
    let mut accs: Vec<DriftAcc> = Vec::new();
    for w in windows(tokens.len(), n_ctx) {
        let ids = &tokens[w.start..][..w.len];
        let all = logits(ids)?;
        let Some((reference, variants)) = all.split_first() else {
            return Err(EngineError::NoTokens);
        };
        accs.resize_with(variants.len(), DriftAcc::default);
        // Row r predicts token r + 1 of the window; the last row has no target here.
        for r in w.scored_from..w.len - 1 {
            let row = |l: &[f32]| l[r * vocab_size..][..vocab_size].to_vec();
            let reference = row(reference);
            for (acc, variant) in accs.iter_mut().zip(variants) {
                acc.add(&reference, &row(variant), ids[r + 1], bytes_of(ids[r + 1]));
            }
        }
    }
    Ok(accs.into_iter().map(DriftAcc::finish).collect())
}

/// ln softmax in f64.
fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
    let sum: f64 = logits.iter().map(|&v| libm::exp(f64::from(v) - max)).sum();
    let log_z = max + libm::log(sum);
    logits.iter().map(|&v| f64::from(v) - log_z).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits per byte divide the nats scored so far by the bytes scored so far:
    /// a partial run reads the rate of the whole one (here 1 bit a byte:
    /// uniform over 4 tokens is 2 bits a token, every token 2 bytes).
    #[test]
    fn bits_per_byte_count_only_the_bytes_scored() {
        let uniform = [0.0f32; 4];
        let mut acc = DriftAcc::default();
        for (i, next) in [1u32, 2, 3, 0, 1, 2].into_iter().enumerate() {
            acc.add(&uniform, &uniform, next, 2);
            let d = acc.clone().finish();
            assert_eq!(d.bytes, 2 * (i + 1));
            assert!(
                (d.bits_per_byte() - 1.0).abs() < 1e-12,
                "after {} tokens: {}",
                i + 1,
                d.bits_per_byte()
            );
        }
    }
}

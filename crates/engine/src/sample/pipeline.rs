//! The stages after the processors, each reporting what it did. Every stage's
//! `probs` is renormalised over what it kept, so it is the distribution a
//! draw would use if the pipeline stopped there.
//!
//! Tie rules (documented for users): tokens are ranked by probability, then by
//! lower id. Top-k keeps exactly k tokens (ties at the k-th value go to the
//! lower ids); top-p keeps the token that crosses p, and always the top token;
//! min-p keeps every token with p ≥ min_p · p_max (ties kept).

use crate::error::{EngineError, Result};
use crate::sample::{processors, softmax, Choice, Settings};

/// What one stage did.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// `processors`, `temperature`, `top_k`, `top_p` or `min_p`.
    pub name: &'static str,
    /// (vocab_size) the distribution after this stage, renormalised.
    pub probs: Vec<f64>,
    /// Ids this stage removed (had p > 0 before it, 0 after), ascending.
    pub removed: Vec<u32>,
    /// Tokens with p > 0 after this stage.
    pub kept_count: usize,
    /// Share of the previous stage's mass that this stage kept.
    pub kept_mass: f64,
    /// Entropy of `probs`, in bits.
    pub entropy_bits: f64,
}

/// Everything the widgets draw for one step, computed without the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// (vocab_size) softmax of the raw logits at T = 1, no cuts: the "raw" bars.
    pub raw_probs: Vec<f64>,
    /// Entropy of `raw_probs`, in bits.
    pub raw_entropy_bits: f64,
    /// The stages in pipeline order; the last one's `probs` is the final distribution.
    pub stages: Vec<Stage>,
    /// (vocab_size) ids by probability after temperature, then lower id. Cuts
    /// keep this order, so the kept tokens come first, ranked as in the final distribution.
    pub order: Vec<u32>,
}

impl Explanation {
    /// (vocab_size) the distribution the draw uses.
    pub fn final_probs(&self) -> &[f64] {
        &self.stages.last().expect("the pipeline always has stages").probs
    }

    /// (vocab_size) whether each token survived every stage.
    pub fn kept(&self) -> Vec<bool> {
        self.final_probs().iter().map(|&p| p > 0.0).collect()
    }

    /// Inverse-CDF draw over the final distribution in id order, for `u` in [0, 1).
    pub fn draw(&self, u: f64) -> Choice {
        let probs = self.final_probs();
        let mut cum = 0.0;
        let mut token = None;
        for (i, &p) in probs.iter().enumerate() {
            cum += p;
            if p > 0.0 && u < cum {
                token = Some(i);
                break;
            }
        }
        // Rounding can leave u just above the total: take the last kept token.
        let token = token.unwrap_or_else(|| probs.iter().rposition(|&p| p > 0.0).unwrap_or(0));
        let rank = self.order.iter().position(|&t| t as usize == token).map_or(0, |r| r + 1);
        Choice { token: token as u32, prob: probs[token], rank }
    }
}

/// Runs every stage on `logits` (the model's raw output) given the `history`.
pub fn explain(logits: &[f32], history: &[u32], settings: &Settings) -> Result<Explanation> {
    settings.validate()?;
    check_logits(logits)?;
    let raw_probs = softmax(logits, 1.0);
    let raw_entropy_bits = entropy_bits(&raw_probs);

    let mut processed: Vec<f64> = logits.iter().map(|&l| f64::from(l)).collect();
    processors::repetition_penalty(&mut processed, history, settings.repetition_penalty);
    processors::frequency_presence(
        &mut processed,
        history,
        settings.frequency_penalty,
        settings.presence_penalty,
    );
    processors::no_repeat_ngram(&mut processed, history, settings.no_repeat_ngram);
    processors::logit_bias(&mut processed, &settings.logit_bias);
    if processed.iter().all(|&l| l == f64::NEG_INFINITY) {
        return Err(EngineError::Setting(
            "every token is banned (bias or no-repeat-n-gram)".into(),
        ));
    }
    let mut stages = vec![stage("processors", &raw_probs, softmax_f64(&processed, 1.0))];

    let t = settings.temperature;
    let probs = if t == 0.0 { one_hot(&processed) } else { softmax_f64(&processed, t) };
    stages.push(stage("temperature", &stages[0].probs, probs));

    // Ranking is fixed from here on: every later stage only cuts and renormalises.
    let order = rank(&stages[1].probs);
    let alive = stages[1].kept_count;
    let k = usize::try_from(settings.top_k).unwrap_or(0);
    let top_k = if k == 0 || k >= alive { order.len() } else { k };
    let keep = cut(&stages[1].probs, &order[..top_k]);
    stages.push(stage("top_k", &stages[1].probs, keep));

    let keep = top_p(&stages[2].probs, &order, settings.top_p);
    stages.push(stage("top_p", &stages[2].probs, keep));

    let prev = &stages[3].probs;
    let p_max = prev[order[0] as usize];
    let keep: Vec<f64> =
        prev.iter().map(|&p| if p >= settings.min_p * p_max { p } else { 0.0 }).collect();
    stages.push(stage("min_p", prev, normalise(keep)));

    // Later stages only cut and renormalise, so the kept tokens keep their order.
    Ok(Explanation { raw_probs, raw_entropy_bits, stages, order })
}

fn check_logits(logits: &[f32]) -> Result<()> {
    if logits.is_empty() {
        return Err(EngineError::Setting("no logits: the vocabulary is empty".into()));
    }
    if let Some(i) = logits.iter().position(|l| l.is_nan() || *l == f32::INFINITY) {
        return Err(EngineError::Setting(format!(
            "logit {i} is {}: logits must be numbers or -inf",
            logits[i]
        )));
    }
    if logits.iter().all(|&l| l == f32::NEG_INFINITY) {
        return Err(EngineError::Setting("every logit is -inf: no token can be chosen".into()));
    }
    Ok(())
}

fn softmax_f64(logits: &[f64], t: f64) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits
        .iter()
        .map(|&v| if v == f64::NEG_INFINITY { 0.0 } else { ((v - max) / t).exp() })
        .collect();
    normalise(e)
}

/// T = 0: all mass on the largest logit, the lowest id winning ties.
fn one_hot(logits: &[f64]) -> Vec<f64> {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    let mut p = vec![0.0; logits.len()];
    p[best] = 1.0;
    p
}

/// Ids with p > 0, most likely first, lower id first on ties; then the rest by id.
fn rank(probs: &[f64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..probs.len() as u32).collect();
    order
        .sort_unstable_by(|&a, &b| probs[b as usize].total_cmp(&probs[a as usize]).then(a.cmp(&b)));
    order
}

/// Keeps only `ids`, renormalised.
fn cut(probs: &[f64], ids: &[u32]) -> Vec<f64> {
    let mut keep = vec![0.0; probs.len()];
    for &i in ids {
        keep[i as usize] = probs[i as usize];
    }
    normalise(keep)
}

/// The smallest prefix of `order` whose mass reaches `p` (the crossing token
/// kept, the top token always kept).
fn top_p(probs: &[f64], order: &[u32], p: f64) -> Vec<f64> {
    if p >= 1.0 {
        return probs.to_vec();
    }
    let mut cum = 0.0;
    let mut n = 0;
    for &i in order {
        if probs[i as usize] == 0.0 {
            break;
        }
        cum += probs[i as usize];
        n += 1;
        if cum >= p {
            break;
        }
    }
    cut(probs, &order[..n.max(1)])
}

fn normalise(mut p: Vec<f64>) -> Vec<f64> {
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|v| *v /= sum);
    p
}

fn entropy_bits(p: &[f64]) -> f64 {
    -p.iter().filter(|&&v| v > 0.0).map(|&v| v * v.log2()).sum::<f64>()
}

fn stage(name: &'static str, before: &[f64], probs: Vec<f64>) -> Stage {
    let removed: Vec<u32> = (0..probs.len())
        .filter(|&i| before[i] > 0.0 && probs[i] == 0.0)
        .map(|i| i as u32)
        .collect();
    let kept_mass = (0..probs.len()).filter(|&i| probs[i] > 0.0).map(|i| before[i]).sum();
    Stage {
        name,
        kept_count: probs.iter().filter(|&&p| p > 0.0).count(),
        kept_mass,
        entropy_bits: entropy_bits(&probs),
        removed,
        probs,
    }
}

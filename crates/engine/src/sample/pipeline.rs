//! The stages after the processors, each reporting what it did. Every stage's
//! `probs` is renormalised over what it kept, so it is the distribution a
//! draw would use if the pipeline stopped there.
//!
//! Tie rules (documented for users): tokens are ranked by probability, then by
//! lower id. Top-k keeps exactly k tokens (ties at the k-th value go to the
//! lower ids); top-p keeps the token that crosses p, and always the top token;
//! min-p keeps every token with p ≥ min_p · p_max (ties kept).

use crate::error::{EngineError, Result};
use crate::sample::rank::{self, Rank};
use crate::sample::{processors, Choice, Settings};

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

    /// The `n` most likely ids, in rank order (see the module docs for ties).
    /// Cuts keep this order, so every kept token ranks ahead of every cut one.
    pub fn top(&self, n: usize) -> Vec<u32> {
        rank::top(self.rank(), n)
    }

    /// 1-based rank of `token` in the order of [`Explanation::top`].
    pub fn rank_of(&self, token: u32) -> usize {
        self.rank().position(token)
    }

    fn rank(&self) -> Rank<'_> {
        Rank { tempered: &self.stages[1].probs, processed: &self.stages[0].probs }
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
        Choice { token: token as u32, prob: probs[token], rank: self.rank_of(token as u32) }
    }
}

/// Runs every stage on `logits` (the model's raw output) given the `history`.
///
/// Cost is a few passes over the vocabulary: two exponentials per token (raw
/// and tempered softmax; entropies come from the same pass), selections instead
/// of sorts for the cuts, and logarithms only over the tokens a cut keeps.
pub fn explain(logits: &[f32], history: &[u32], settings: &Settings) -> Result<Explanation> {
    settings.validate()?;
    check_logits(logits)?;
    let logits: Vec<f64> = logits.iter().map(|&l| f64::from(l)).collect();
    let (raw_probs, raw_entropy_bits) = softmax_entropy(&logits, 1.0);

    let processed = process(&logits, history, settings)?;
    let processors = match &processed {
        Some(l) => {
            let (probs, entropy) = softmax_entropy(l, 1.0);
            Stage::reshaped("processors", &raw_probs, probs, entropy)
        }
        // Most steps run no processor: reuse the raw softmax.
        None => Stage::reshaped("processors", &raw_probs, raw_probs.clone(), raw_entropy_bits),
    };

    let t = settings.temperature;
    let scaled = processed.as_deref().unwrap_or(&logits);
    let (probs, entropy) = match t {
        0.0 => (one_hot(scaled), 0.0),
        1.0 => (processors.probs.clone(), processors.entropy_bits),
        _ => softmax_entropy(scaled, t),
    };
    let temperature = Stage::reshaped("temperature", &processors.probs, probs, entropy);

    let rank = Rank { tempered: &temperature.probs, processed: &processors.probs };
    // Candidates: the tokens still alive, narrowed by each cut. Cuts never
    // reorder, so each one selects a leading part of the previous survivors.
    let mut alive: Vec<u32> =
        (0..logits.len() as u32).filter(|&i| rank.tempered[i as usize] > 0.0).collect();
    let k = usize::try_from(settings.top_k).unwrap_or(0);
    if k > 0 && k < alive.len() {
        rank.select(&mut alive, k);
        alive.truncate(k);
    }
    let top_k = Stage::cut("top_k", &temperature, &alive);

    if settings.top_p < 1.0 {
        let n = rank.nucleus(&top_k.probs, &mut alive, settings.top_p);
        alive.truncate(n);
    }
    let top_p = Stage::cut("top_p", &top_k, &alive);

    let p_max = alive.iter().map(|&i| top_p.probs[i as usize]).fold(0.0, f64::max);
    let threshold = settings.min_p * p_max;
    alive.retain(|&i| top_p.probs[i as usize] >= threshold);
    let min_p = Stage::cut("min_p", &top_p, &alive);

    let stages = vec![processors, temperature, top_k, top_p, min_p];
    Ok(Explanation { raw_probs, raw_entropy_bits, stages })
}

/// The logits after every processor, or `None` when none changed anything.
fn process(logits: &[f64], history: &[u32], settings: &Settings) -> Result<Option<Vec<f64>>> {
    let s = settings;
    let neutral = s.repetition_penalty == 1.0
        && s.frequency_penalty == 0.0
        && s.presence_penalty == 0.0
        && s.no_repeat_ngram == 0
        && s.logit_bias.is_empty();
    if neutral {
        return Ok(None);
    }
    let mut processed = logits.to_vec();
    processors::repetition_penalty(&mut processed, history, s.repetition_penalty);
    processors::frequency_presence(
        &mut processed,
        history,
        s.frequency_penalty,
        s.presence_penalty,
    );
    processors::no_repeat_ngram(&mut processed, history, s.no_repeat_ngram);
    processors::logit_bias(&mut processed, &s.logit_bias);
    if processed.iter().all(|&l| l == f64::NEG_INFINITY) {
        return Err(EngineError::Setting(
            "every token is banned (bias or no-repeat-n-gram)".into(),
        ));
    }
    Ok((processed != logits).then_some(processed))
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

/// softmax(logits / t) and its entropy in bits, with one exponential and no
/// logarithm per token: with z = (l − max) / t and Z = Σ eᶻ, ln p = z − ln Z,
/// so −Σ p ln p = ln Z − Σ p z. `-inf` logits get probability 0.
fn softmax_entropy(logits: &[f64], t: f64) -> (Vec<f64>, f64) {
    // Dividing by t (not multiplying by 1/t): a subnormal t makes 1/t infinite.
    // A plain comparison loop: `f64::max`'s NaN handling costs more than the
    // exponentials' share here, and `check_logits` has already ruled NaN out.
    let mut max = f64::NEG_INFINITY;
    for &v in logits {
        if v > max {
            max = v;
        }
    }
    // One pass for the exponentials and both sums, then a multiply-only pass
    // the compiler vectorises.
    let (mut z_sum, mut ez_sum) = (0.0, 0.0);
    let mut probs: Vec<f64> = logits
        .iter()
        .map(|&v| {
            let z = (v - max) / t;
            let e = if v == f64::NEG_INFINITY { 0.0 } else { libm::exp(z) };
            if e > 0.0 {
                z_sum += e;
                ez_sum += e * z;
            }
            e
        })
        .collect();
    let inv_sum = 1.0 / z_sum; // z_sum ≥ 1: the max contributes e⁰
    probs.iter_mut().for_each(|p| *p *= inv_sum);
    let pz = ez_sum * inv_sum;
    (probs, ((libm::log(z_sum) - pz) / std::f64::consts::LN_2).max(0.0))
}

/// T = 0: all mass on the largest logit, the lowest id winning ties.
fn one_hot(logits: &[f64]) -> Vec<f64> {
    let (mut best, mut best_value) = (0, f64::NEG_INFINITY);
    for (i, &v) in logits.iter().enumerate() {
        if v > best_value {
            (best, best_value) = (i, v);
        }
    }
    let mut p = vec![0.0; logits.len()];
    p[best] = 1.0;
    p
}

impl Stage {
    /// A stage that may change every probability (processors, temperature).
    fn reshaped(name: &'static str, before: &[f64], probs: Vec<f64>, entropy_bits: f64) -> Stage {
        let (mut kept_count, mut kept_mass, mut removed) = (0, 0.0, Vec::new());
        for (i, (&b, &p)) in before.iter().zip(&probs).enumerate() {
            if p > 0.0 {
                kept_count += 1;
                kept_mass += b;
            } else if b > 0.0 {
                removed.push(i as u32);
            }
        }
        Stage { name, probs, removed, kept_count, kept_mass, entropy_bits }
    }

    /// A stage that keeps only the ids in `kept` (in any order) of `before`, renormalised.
    fn cut(name: &'static str, before: &Stage, kept: &[u32]) -> Stage {
        if kept.len() == before.kept_count {
            // Nothing removed: same distribution, same entropy, all the mass kept.
            let probs = before.probs.clone();
            let (kept_count, entropy_bits) = (before.kept_count, before.entropy_bits);
            return Stage {
                name,
                probs,
                removed: Vec::new(),
                kept_count,
                kept_mass: 1.0,
                entropy_bits,
            };
        }
        let kept_mass: f64 = kept.iter().map(|&i| before.probs[i as usize]).sum();
        let mut probs = vec![0.0; before.probs.len()];
        let mut entropy = 0.0;
        for &i in kept {
            let p = before.probs[i as usize] / kept_mass;
            probs[i as usize] = p;
            entropy -= p * libm::log2(p);
        }
        let removed = (0..probs.len() as u32)
            .filter(|&i| before.probs[i as usize] > 0.0 && probs[i as usize] == 0.0)
            .collect();
        Stage {
            name,
            probs,
            removed,
            kept_count: kept.len(),
            kept_mass,
            entropy_bits: entropy.max(0.0),
        }
    }
}

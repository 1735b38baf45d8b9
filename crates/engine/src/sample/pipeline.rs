//! The stages after the processors, each reporting what it did. Every stage's
//! `probs` is renormalised over what it kept, so it is the distribution a
//! draw would use if the pipeline stopped there.
//!
//! Tie rules (documented for users): tokens are ranked by probability, then by
//! lower id. Top-k keeps exactly k tokens (ties at the k-th value go to the
//! lower ids); top-p keeps the token that crosses p, and always the top token;
//! min-p keeps every token with p ≥ min_p · p_max (ties kept).

use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::sample::processors::{self, Effect, Processor};
use crate::sample::rank::{self, Candidate, Rank};
use crate::sample::softmax::{one_hot, softmax_entropy, sum_lanes};
use crate::sample::{Choice, Settings};

/// The stages, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageKind {
    Processors,
    Temperature,
    TopK,
    TopP,
    MinP,
}

impl StageKind {
    /// Every stage, in pipeline order.
    pub const ALL: [StageKind; 5] = [
        StageKind::Processors,
        StageKind::Temperature,
        StageKind::TopK,
        StageKind::TopP,
        StageKind::MinP,
    ];

    /// Its name as the settings and the CLI's JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            StageKind::Processors => "processors",
            StageKind::Temperature => "temperature",
            StageKind::TopK => "top_k",
            StageKind::TopP => "top_p",
            StageKind::MinP => "min_p",
        }
    }
}

/// What one stage did.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// Which stage this is.
    pub kind: StageKind,
    /// (vocab_size) the distribution after this stage, renormalised. Shared
    /// with the stage before when this one changed nothing.
    pub probs: Arc<[f64]>,
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
    pub raw_probs: Arc<[f64]>,
    /// Entropy of `raw_probs`, in bits.
    pub raw_entropy_bits: f64,
    /// The stages in pipeline order; the last one's `probs` is the final distribution.
    pub stages: Vec<Stage>,
    /// Each processor that is on, in order, with what it changed.
    pub effects: Vec<Effect>,
}

impl Explanation {
    /// The stage of that kind (every explanation has all five).
    pub fn stage(&self, kind: StageKind) -> &Stage {
        &self.stages[kind as usize]
    }

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
        Rank {
            tempered: &self.stage(StageKind::Temperature).probs,
            processed: &self.stage(StageKind::Processors).probs,
        }
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
/// and tempered softmax, vectorised; their entropies need no logarithm),
/// selections instead of sorts for the cuts, and logarithms only over the
/// tokens a cut keeps. A stage that changes nothing shares its predecessor's
/// `probs` rather than copying them: at 50k tokens, memory traffic costs as
/// much as arithmetic. `decode-lab bench` prints the time per step.
pub fn explain(logits: &[f32], history: &[u32], settings: &Settings) -> Result<Explanation> {
    settings.validate()?;
    check_logits(logits)?;
    let (raw_probs, raw_entropy_bits) = softmax_entropy(logits, 1.0);

    let (processed, effects) = process(logits, history, settings)?;
    let processors = match &processed {
        Some(l) => {
            let (probs, entropy) = softmax_entropy(l, 1.0);
            Stage::reshaped(StageKind::Processors, &raw_probs, probs, entropy)
        }
        // Most steps run no processor: reuse the raw softmax.
        None => Stage::first(StageKind::Processors, raw_probs.clone(), raw_entropy_bits),
    };

    let t = settings.temperature;
    let reshaped = |(probs, entropy)| {
        Stage::reshaped(StageKind::Temperature, &processors.probs, probs, entropy)
    };
    let temperature = match (t, &processed) {
        (1.0, _) => Stage::unchanged(StageKind::Temperature, &processors),
        (0.0, Some(l)) => reshaped((one_hot(l), 0.0)),
        (0.0, None) => reshaped((one_hot(logits), 0.0)),
        (_, Some(l)) => reshaped(softmax_entropy(l, t)),
        (_, None) => reshaped(softmax_entropy(logits, t)),
    };

    let cuts = cuts(&processors, &temperature, settings);
    let stages = [processors, temperature].into_iter().chain(cuts).collect();
    Ok(Explanation { raw_probs, raw_entropy_bits, stages, effects })
}

/// The cuts after `temperature`, in order: top-k, top-p, min-p. Candidates
/// are the tokens still alive, narrowed by each cut; cuts never reorder, so
/// each one selects a leading part of the previous survivors.
fn cuts(processors: &Stage, temperature: &Stage, settings: &Settings) -> [Stage; 3] {
    let rank = Rank { tempered: &temperature.probs, processed: &processors.probs };
    let k = usize::try_from(settings.top_k).unwrap_or(0);
    let top_k_on = k > 0 && k < temperature.kept_count;
    if !top_k_on && settings.top_p == 1.0 && settings.min_p == 0.0 {
        // Every cut off (plain sampling): skip listing 50k candidates for nothing.
        let unchanged = |name| Stage::unchanged(name, temperature);
        return [StageKind::TopK, StageKind::TopP, StageKind::MinP].map(unchanged);
    }
    let mut alive = match top_k_on {
        true => rank.top_k(k),
        false => rank.alive(temperature.kept_count),
    };
    let top_k = Stage::cut(StageKind::TopK, temperature, &alive, None);

    let mut dropped = Vec::new();
    if settings.top_p < 1.0 {
        let n = rank.nucleus(&top_k.probs, &mut alive, settings.top_p);
        dropped = alive.split_off(n);
    }
    let top_p = Stage::cut(StageKind::TopP, &top_k, &alive, Some(&dropped));

    if settings.min_p > 0.0 {
        let p = |c: &Candidate| top_p.probs[c.id as usize];
        let p_max = alive.iter().map(p).fold(0.0, |max, p| if p > max { p } else { max });
        let threshold = settings.min_p * p_max;
        (alive, dropped) = alive.iter().partition(|c| p(c) >= threshold);
    } else {
        dropped.clear();
    }
    let min_p = Stage::cut(StageKind::MinP, &top_p, &alive, Some(&dropped));

    [top_k, top_p, min_p]
}

/// The logits after every processor (`None` when none changed anything),
/// and what each processor that is on did.
fn process(
    logits: &[f32],
    history: &[u32],
    settings: &Settings,
) -> Result<(Option<Vec<f64>>, Vec<Effect>)> {
    let s = settings;
    let on: Vec<Processor> = Processor::ALL.into_iter().filter(|p| p.is_on(s)).collect();
    if on.is_empty() {
        return Ok((None, Vec::new()));
    }
    let mut processed: Vec<f64> = logits.iter().map(|&l| f64::from(l)).collect();
    let repetition = processors::repetition_penalty(&mut processed, history, s.repetition_penalty);
    // Frequency and presence are one pass (one count of the history).
    let (f, p) = (s.frequency_penalty, s.presence_penalty);
    let counted = processors::frequency_presence(&mut processed, history, f, p);
    let banned = processors::no_repeat_ngram(&mut processed, history, s.no_repeat_ngram);
    let biased = processors::logit_bias(&mut processed, &s.logit_bias);
    if processed.iter().all(|&l| l == f64::NEG_INFINITY) {
        return Err(EngineError::Setting(
            "every token is banned (bias or no-repeat-n-gram)".into(),
        ));
    }
    let effects = on
        .into_iter()
        .map(|processor| Effect {
            processor,
            changed: match processor {
                Processor::RepetitionPenalty => repetition,
                Processor::FrequencyPenalty | Processor::PresencePenalty => counted,
                Processor::NoRepeatNgram => banned,
                Processor::LogitBias => biased,
            },
        })
        .collect();
    let changed = processed.iter().zip(logits).any(|(&p, &l)| p != f64::from(l));
    Ok((changed.then_some(processed), effects))
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

impl Stage {
    /// The first stage when no processor changed anything: the raw softmax, shared.
    fn first(kind: StageKind, probs: Arc<[f64]>, entropy_bits: f64) -> Stage {
        let kept_count = probs.iter().filter(|&&p| p > 0.0).count();
        Stage { kind, probs, removed: Vec::new(), kept_count, kept_mass: 1.0, entropy_bits }
    }

    /// A stage that changed nothing: `before`'s distribution, shared.
    fn unchanged(kind: StageKind, before: &Stage) -> Stage {
        Stage { kind, removed: Vec::new(), kept_mass: 1.0, probs: before.probs.clone(), ..*before }
    }

    /// A stage that may change every probability (processors, temperature).
    fn reshaped(kind: StageKind, before: &[f64], probs: Arc<[f64]>, entropy_bits: f64) -> Stage {
        // Usually nothing drops to 0 here: only a ban or an underflow at a tiny
        // temperature does. (A huge temperature can also revive a token that
        // underflowed at T = 1: kept, with no mass before.)
        let removed = removed(before, &probs, 0);
        let kept_count = probs.iter().filter(|&&p| p > 0.0).count();
        let kept_mass = match removed.is_empty() {
            true => 1.0,
            false => sum_lanes(
                before.iter().zip(probs.iter()).map(|(&b, &p)| if p > 0.0 { b } else { 0.0 }),
            ),
        };
        Stage { kind, probs, removed, kept_count, kept_mass, entropy_bits }
    }

    /// A stage that keeps only the candidates in `kept` (in any order) of
    /// `before`, renormalised. `dropped`, when the caller knows it, lists
    /// the rest of `before`'s survivors (it saves a pass over the vocabulary).
    fn cut(
        kind: StageKind,
        before: &Stage,
        kept: &[Candidate],
        dropped: Option<&[Candidate]>,
    ) -> Stage {
        if kept.len() == before.kept_count {
            // Nothing removed: same distribution, same entropy, all the mass kept.
            return Stage::unchanged(kind, before);
        }
        let kept_mass = sum_lanes(kept.iter().map(|c| before.probs[c.id as usize]));
        // One allocation, zeroed, written in place (an `Arc` from a `Vec` would copy).
        let mut probs: Arc<[f64]> = std::iter::repeat_n(0.0, before.probs.len()).collect();
        let slots = Arc::get_mut(&mut probs).expect("just allocated, not shared");
        let mut entropy = 0.0;
        for c in kept {
            let p = before.probs[c.id as usize] / kept_mass;
            slots[c.id as usize] = p;
            entropy -= p * libm::log2(p);
        }
        // Sorting a few ids beats a pass over the vocabulary; sorting many does not.
        let removed = match dropped.filter(|d| d.len() * 16 < before.probs.len()) {
            Some(dropped) => {
                let mut ids: Vec<u32> = dropped.iter().map(|c| c.id).collect();
                ids.sort_unstable();
                ids
            }
            None => removed(&before.probs, &probs, before.kept_count - kept.len()),
        };
        Stage {
            kind,
            probs,
            removed,
            kept_count: kept.len(),
            kept_mass,
            entropy_bits: entropy.max(0.0),
        }
    }
}

/// Ids with p > 0 in `before` and 0 in `after`, ascending; `count` is a
/// capacity hint (0 when unknown).
fn removed(before: &[f64], after: &[f64], count: usize) -> Vec<u32> {
    let mut removed = Vec::with_capacity(count);
    let pairs = before.iter().zip(after).enumerate();
    removed.extend(pairs.filter(|(_, (&b, &a))| b > 0.0 && a == 0.0).map(|(i, _)| i as u32));
    removed
}

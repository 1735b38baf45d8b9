//! Beam search with its whole history, on the batch engine: the B live beams
//! sit in B cache slots of one [`Batch`] and advance in one batched step per
//! round. Every step records its `2·B` best candidates (parent, token, log-prob,
//! cumulative, fate), so a page can draw the tree of what was kept and what
//! was pruned, and re-rank the finished hypotheses under another length
//! penalty without running the model again ([`BeamSearch::ranked`]).
//!
//! Caches: a beam's first child keeps its parent's slot (the prefix is
//! already there); only a second child of one parent needs a copy, into a slot
//! whose beam left no child. Forking every child would copy B caches a step;
//! [`BeamCost`] counts both.

mod rank;
mod select;

pub use rank::{ranked, Hypothesis, Scoring};
pub use select::{candidates, slots, Candidate, Fate};

use crate::batch::Batch;
use crate::error::{EngineError, Result};
use crate::model::Tokenizer;
use crate::session::Session;

/// The widest beam search accepted: every beam holds its own KV cache, so
/// memory grows with the width (16 × a GPT-2-124M cache is 1.2 GB).
pub const MAX_BEAMS: usize = 16;

/// Length penalties outside this range only overflow the score
/// (`len^penalty` becomes 0 or infinite); useful values lie in −2 … 2.
pub const LENGTH_PENALTY_RANGE: std::ops::RangeInclusive<f64> = -10.0..=10.0;

/// What a beam search is asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct BeamSettings {
    /// B: live beams per step (1 = greedy).
    pub width: usize,
    /// Steps at most (also bounded by the context left after the prompt).
    pub max_new_tokens: usize,
    pub scoring: Scoring,
    /// Tokens that end a hypothesis ([`Ends::tokens`]).
    pub ends: Vec<u32>,
}

/// Checks a beam width and length penalty before any work.
pub fn check_beam_settings(width: usize, length_penalty: f64) -> Result<()> {
    if !(1..=MAX_BEAMS).contains(&width) {
        return Err(EngineError::Setting(format!(
            "beam width must be between 1 and {MAX_BEAMS}, got {width}"
        )));
    }
    if !LENGTH_PENALTY_RANGE.contains(&length_penalty) {
        return Err(EngineError::Setting(format!(
            "length penalty must be a number between {} and {}, got {length_penalty:?}",
            LENGTH_PENALTY_RANGE.start(),
            LENGTH_PENALTY_RANGE.end()
        )));
    }
    Ok(())
}

/// Where a hypothesis ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// At the model's end-of-text token (Hugging Face's `eos_token_id`).
    EndOfText,
    /// Also at any token whose text holds a line break: hypotheses then end
    /// at different lengths, and the length penalty has something to weigh.
    Line,
}

impl Ends {
    pub const ALL: [Ends; 2] = [Ends::EndOfText, Ends::Line];
    /// The names the CLI (`--ends-at`) and the URL (`ends_at=`) use.
    pub const NAMES: [&'static str; 2] = ["end-of-text", "line"];

    pub fn name(self) -> &'static str {
        Ends::NAMES[self as usize]
    }

    pub fn from_name(name: &str) -> Option<Ends> {
        Ends::ALL.into_iter().find(|e| e.name() == name.trim())
    }

    /// The token ids that end a hypothesis.
    pub fn tokens(self, tokenizer: &Tokenizer, eos: Option<u32>) -> Result<Vec<u32>> {
        let mut ends: Vec<u32> = eos.into_iter().collect();
        if self == Ends::Line {
            for id in 0..tokenizer.vocab_size() as u32 {
                if Some(id) != eos && tokenizer.decode(&[id])?.contains('\n') {
                    ends.push(id);
                }
            }
        }
        Ok(ends)
    }
}

/// One step of the search: its candidates, best first (the index is the rank).
#[derive(Clone, Debug, PartialEq)]
pub struct BeamStep {
    pub candidates: Vec<Candidate>,
    /// The rank of each kept beam, in beam order.
    pub kept: Vec<usize>,
    /// Caches copied to seat this step's beams, and their bytes.
    pub copies: usize,
    pub copy_bytes: u64,
}

/// What the search cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BeamCost {
    /// Forward passes: the prefill and each batched step.
    pub passes: usize,
    /// Tokens decoded (a batched step decodes one per live beam).
    pub decoded: usize,
    pub submits: usize,
    pub kv_copies: usize,
    pub kv_bytes_copied: u64,
    /// What forking every kept child would have copied instead.
    pub fork_copies: usize,
    pub fork_bytes: u64,
    pub wall_ms: f64,
}

/// A surviving or finished hypothesis as the CLI prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct Beam {
    /// Generated tokens (without the prompt; with the end token if it ended on one).
    pub tokens: Vec<u32>,
    /// Sum of the natural-log probabilities of `tokens`.
    pub logprob: f64,
    /// What beams are ranked by: `logprob / length^penalty`.
    pub score: f64,
}

/// A live beam: its slot in the batch and its path so far.
struct Live {
    slot: usize,
    tokens: Vec<u32>,
    cumulative: f64,
    /// Its candidate in the last step: (step, rank).
    node: Option<(usize, usize)>,
}

/// A beam search in progress (or done): [`start`](Self::start), then
/// [`step`](Self::step) until it returns `false`.
pub struct BeamSearch {
    settings: BeamSettings,
    prompt_len: usize,
    /// Steps this search may take (the settings' bound, within the context).
    max_steps: usize,
    batch: Batch,
    live: Vec<Live>,
    /// (live) × (vocab_size) logits for each live beam's next token.
    logits: Vec<Vec<f32>>,
    steps: Vec<BeamStep>,
    hypotheses: Vec<Hypothesis>,
    cost: BeamCost,
    done: bool,
}

mod drive;

impl BeamSearch {
    pub fn settings(&self) -> &BeamSettings {
        &self.settings
    }

    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    /// Steps this search may take at most.
    pub fn max_steps(&self) -> usize {
        self.max_steps
    }

    /// Every step so far, in order.
    pub fn steps(&self) -> &[BeamStep] {
        &self.steps
    }

    /// Every hypothesis finished so far, in the order found (when the search
    /// is done: the live beams it stopped with too).
    pub fn hypotheses(&self) -> &[Hypothesis] {
        &self.hypotheses
    }

    pub fn cost(&self) -> BeamCost {
        self.cost
    }

    pub fn done(&self) -> bool {
        self.done
    }

    /// The batch (its sessions hold the live beams' caches).
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The finished hypotheses ranked under `scoring` (best first): the
    /// search's own ranking at its settings, or a re-ranking without the model.
    pub fn ranked(&self, scoring: Scoring) -> Vec<(usize, f64)> {
        ranked(&self.hypotheses, scoring, self.prompt_len)
    }

    /// The search's answer: its best `width` hypotheses at its own settings.
    pub fn beams(&self) -> Vec<Beam> {
        self.ranked(self.settings.scoring)
            .into_iter()
            .take(self.settings.width)
            .map(|(i, score)| {
                let h = &self.hypotheses[i];
                Beam { tokens: h.tokens.clone(), logprob: h.logprob, score }
            })
            .collect()
    }

    /// The path from the first step to `node`: see [`path`].
    pub fn path(&self, node: (usize, usize)) -> Vec<(usize, usize)> {
        path(&self.steps, node)
    }
}

/// The candidates from the first step to `node` (step, rank) — the path a
/// hypothesis took — as (step, rank) per step.
pub fn path(steps: &[BeamStep], node: (usize, usize)) -> Vec<(usize, usize)> {
    let (mut step, mut rank) = node;
    let mut path = vec![node];
    while step > 0 {
        let parent = steps[step].candidates[rank].parent;
        step -= 1;
        rank = steps[step].kept[parent];
        path.push((step, rank));
    }
    path.reverse();
    path
}

/// Runs a whole search; returns up to `width` beams, best first.
pub async fn beam_search(
    session: Session,
    prompt: &[u32],
    settings: BeamSettings,
) -> Result<Vec<Beam>> {
    let mut search = BeamSearch::start(session, prompt, settings).await?;
    while search.step().await? {}
    Ok(search.beams())
}

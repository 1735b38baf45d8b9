//! The speculative lesson's measurement, on this page's engine: the model
//! decodes the prompt's continuation plainly (timed), then again with its
//! own first L blocks drafting K tokens a round (`engine::speculate`),
//! each round shown as it ends; a row per run with α, tokens per target
//! pass, the expected tokens per pass from α, and the measured speed-up.

use std::sync::Arc;

use contract::Control;
use engine::run::Job;
use engine::serve::run_alone;
use engine::speculate::{generate, Outcome, Round};
use leptos::prelude::*;
use web_time::Instant;

use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, settle, steps_in_room, Progress};

/// The draft sizes the sweep runs.
pub const SWEEP: [usize; 3] = [2, 4, 8];

/// One speculative run against plain decoding of the same continuation.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub k: usize,
    pub layers: usize,
    pub acceptance: f64,
    pub tokens_per_pass: f64,
    pub rounds: usize,
    pub target_passes: usize,
    pub draft_passes: usize,
    pub plain_ms: f64,
    pub plain_tokens: usize,
    pub spec_ms: f64,
    pub spec_tokens: usize,
    /// Greedy: whether the text is the plain one (sampled runs need not be).
    pub same_text: Option<bool>,
}

impl Row {
    /// The row of a run with K = `k` drafted by the first `layers` blocks:
    /// its outcome `out` in `spec_ms`, beside plain decoding's tokens and time.
    fn of(
        (k, layers): (usize, usize),
        out: &Outcome,
        (plain, plain_ms): (&[u32], f64),
        spec_ms: f64,
        greedy: bool,
    ) -> Row {
        Row {
            k,
            layers,
            acceptance: out.acceptance(),
            tokens_per_pass: out.tokens_per_pass(),
            rounds: out.rounds.len(),
            target_passes: out.target_passes,
            draft_passes: out.draft_passes,
            plain_ms,
            plain_tokens: plain.len(),
            spec_ms,
            spec_tokens: out.tokens.len(),
            same_text: greedy.then(|| out.tokens == plain),
        }
    }

    /// Tokens per target pass that α predicts: (1 − α^(K+1)) / (1 − α).
    pub fn expected(&self) -> f64 {
        let a = self.acceptance;
        match a < 1.0 {
            true => (1.0 - a.powi(self.k as i32 + 1)) / (1.0 - a),
            false => self.k as f64 + 1.0,
        }
    }

    /// Plain decoding's time per token over speculative's.
    pub fn speedup(&self) -> f64 {
        let plain = self.plain_ms / self.plain_tokens.max(1) as f64;
        let spec = self.spec_ms / self.spec_tokens.max(1) as f64;
        plain / spec
    }
}

/// What the measurement fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub rows: RwSignal<Vec<Row>>,
    /// The last run's rounds, as they end.
    pub rounds: RwSignal<Vec<Round>>,
    /// The last run's text (the prompt's not included).
    pub text: RwSignal<String>,
    pub progress: RwSignal<Progress>,
}

/// The draft's blocks as the model allows: 1 to one fewer than its own.
fn layers(d: Driver) -> Result<usize, String> {
    let n_layer = d.lab.with_value(|l| l.model.config.n_layer);
    if n_layer < 2 {
        return Err("this model has one block: no smaller draft can be cut from it".into());
    }
    let asked = d.controls.number(Control::DraftLayers).get_untracked() as usize;
    let limit = format!("this model's blocks less one, 1–{}", n_layer - 1);
    Ok(d.limited(Control::DraftLayers, asked, asked.clamp(1, n_layer - 1), &limit))
}

/// Runs plain decoding once, then speculative decoding for each of `ks`.
pub async fn measure(d: Driver, sinks: Sinks, ks: Vec<usize>) -> Result<(), String> {
    let (ids, n_positions) = prompt_ids(d, "the draft and the model continue it")?;
    let asked = d.controls.number(Control::MaxTokens).get_untracked() as usize;
    let max_tokens = steps_in_room(d, asked, n_positions - ids.len());
    // A round emits several tokens at once: stop strings are not taken here.
    let job = Job { max_tokens, stop: Vec::new(), ..d.controls.job_untracked() };
    let layers = layers(d)?;
    let total = ks.len() + 2;
    let progress = |what: String, done| sinks.progress.set(Progress { what, done, total });
    let mut target = d.lab.with_value(|l| l.session())?;
    settle(&target, sinks.progress).await?;
    progress("plain decoding (the model alone)".into(), 0);
    let start = Instant::now();
    let plain =
        run_alone(&mut target, &ids, &job.settings, job.seed, max_tokens).await.map_err(err)?;
    let plain_ms = start.elapsed().as_secs_f64() * 1e3;
    if d.stop_asked() {
        return Ok(());
    }
    progress(format!("opening the draft: the first {layers} blocks"), 1);
    let (engine, model) = d.lab.with_value(|l| (l.engine(), l.model.clone()));
    let draft_model = Arc::new(model.first_blocks(layers).map_err(err)?);
    let draft_engine = engine.reopen(draft_model).await.map_err(err)?;
    let greedy = job.settings.temperature == 0.0;
    let tokenizer = d.lab.with_value(|l| l.tokenizer.clone());
    for (n, k) in ks.into_iter().enumerate() {
        progress(format!("speculative decoding, K = {k}"), n + 2);
        sinks.rounds.set(Vec::new());
        let mut target = d.lab.with_value(|l| l.session())?;
        let mut draft = draft_engine.session().map_err(err)?;
        let on_round = |r: &Round| {
            sinks.rounds.update(|rounds| rounds.push(r.clone()));
            !d.stop_asked()
        };
        let start = Instant::now();
        let out = generate(&mut target, &mut draft, &ids, &job, k, on_round).await.map_err(err)?;
        let spec_ms = start.elapsed().as_secs_f64() * 1e3;
        sinks.text.set(tokenizer.decode(&out.tokens).map_err(err)?);
        if d.stop_asked() {
            return Ok(());
        }
        let row = Row::of((k, layers), &out, (&plain, plain_ms), spec_ms, greedy);
        sinks.rows.update(|rows| rows.push(row));
    }
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

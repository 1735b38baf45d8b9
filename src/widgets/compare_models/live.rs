//! Both models generate from the prompt with the page's settings and seed,
//! one step each in turn. Each step keeps both models' logits (the panels
//! redraw them under any settings without running a model), the KL
//! divergence KL(A ‖ B) between the models' next-token distributions (T = 1,
//! before any setting) and whether both put the same token first — only
//! where the vocabularies are the same tokens, else there is nothing to
//! compare token by token, and the page says so.
//!
//! KL and top-1 always compare the two models on one context: A's text.
//! While the texts agree that is each model's own run; once they part, model
//! B is also scored on A's tokens (a third session, fed what A wrote: the
//! usual way to compare two models), so no figure mixes two contexts.

use std::rc::Rc;
use std::sync::Arc;

use engine::lessons::quality::DriftAcc;
use engine::model::Tokenizer;
use engine::run::{Done, Job, Run, Step};
use engine::{Session, Wanted};
use leptos::prelude::*;

use super::open::ModelB;
use crate::browser::yield_to_browser;
use crate::distribution::StepInput;
use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, steps_in_room};

/// Whether two models' token ids mean the same tokens.
#[derive(Clone, Debug, PartialEq)]
pub enum Vocab {
    Same(usize),
    /// (A's size, B's size) and what differs.
    Differ(usize, usize, String),
}

/// One model's part of a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    /// Its logits after its own text so far.
    pub input: StepInput,
    /// The token it wrote: its id and text.
    pub id: u32,
    pub token: String,
}

/// One step of both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    pub a: Side,
    pub b: Side,
    /// KL(A ‖ B) in nats and the same most likely token, both models on A's
    /// text (same vocabulary only).
    pub kl: Option<f64>,
    pub same_top1: Option<bool>,
    /// Both texts were the same tokens before this step (same vocabulary
    /// only): else B was scored on A's text for `kl` and `same_top1`.
    pub same_context: bool,
}

/// What a generation fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub steps: RwSignal<Vec<StepRow>>,
    /// Each model's text so far: A's, B's.
    pub texts: [RwSignal<String>; 2],
    pub vocab: RwSignal<Option<Vocab>>,
    /// The step the panels show (`None`: the last).
    pub selected: RwSignal<Option<usize>>,
    /// Why a run ended before the last step (one model's end of text).
    pub ended: RwSignal<Option<String>>,
}

impl Sinks {
    fn clear(&self) {
        self.steps.set(Vec::new());
        self.texts.iter().for_each(|t| t.set(String::new()));
        self.selected.set(None);
        self.ended.set(None);
    }
}

/// The same tokens under the same ids (and as many logits), or what differs.
pub fn vocab(a: &Tokenizer, b: &Tokenizer, logits_a: usize, logits_b: usize) -> Vocab {
    let (na, nb) = (a.vocab_size(), b.vocab_size());
    if let Some(diff) = a.differs_from(b) {
        return Vocab::Differ(na, nb, diff.describe("model A", "model B"));
    }
    if logits_a != logits_b {
        let why = format!("model A scores {logits_a} ids, model B {logits_b}");
        return Vocab::Differ(na, nb, why);
    }
    Vocab::Same(na)
}

/// Generates `steps` tokens on both models.
pub async fn generate(d: Driver, sinks: Sinks, b: Rc<ModelB>, steps: usize) -> Result<(), String> {
    sinks.clear();
    let (ids_a, n_positions) = prompt_ids(d, "both models start from it")?;
    let prompt = d.prompt.get_untracked();
    let ids_b = b.tokenizer.encode(&prompt).map_err(|e| e.to_string())?;
    if ids_b.is_empty() || ids_b.len() >= b.n_positions {
        return Err(format!(
            "model B reads the prompt as {} tokens; its context holds {}",
            ids_b.len(),
            b.n_positions
        ));
    }
    let (session_a, tokenizer_a) = d.lab.with_value(|l| (l.session(), l.tokenizer.clone()));
    let (session_a, session_b) = (session_a?, b.engine.session().map_err(err)?);
    let vocab = vocab(
        &tokenizer_a,
        &b.tokenizer,
        session_a.config().vocab_size,
        session_b.config().vocab_size,
    );
    let matched = matches!(vocab, Vocab::Same(_));
    sinks.vocab.set(Some(vocab));
    // Compared, B also reads A's text: it must fit B's context too.
    let scored_room = if matched { b.n_positions.saturating_sub(ids_a.len()) } else { usize::MAX };
    let room = (n_positions - ids_a.len()).min(b.n_positions - ids_b.len()).min(scored_room);
    if room == 0 {
        return Err(format!(
            "model B's context ({} tokens) has no room after the prompt",
            b.n_positions
        ));
    }
    let steps = steps_in_room(d, steps, room);
    let job = Job { max_tokens: steps, stop: Vec::new(), ..d.controls.job_untracked() };
    let mut run_a = Run::start_ids(session_a, ids_a.clone(), &job).await.map_err(err)?;
    let mut run_b = Run::start_ids(session_b, ids_b.clone(), &job).await.map_err(err)?;
    sinks.texts.iter().for_each(|t| t.set(prompt.clone()));
    let (mut history_a, mut history_b) = (ids_a, ids_b);
    // Model B on A's text, opened when the texts part.
    let mut scored: Option<Session> = None;
    for _ in 0..steps {
        if d.stop_asked() {
            break;
        }
        let step_a = run_a.step(&tokenizer_a, None).await.map_err(err)?;
        let step_b = run_b.step(&b.tokenizer, None).await.map_err(err)?;
        let same_context = matched && history_a == history_b;
        let (kl, same_top1) = match (matched, same_context) {
            (false, _) => (None, None),
            (true, true) => compared(&step_a.logits, &step_b.logits, step_a.choice.token),
            (true, false) => {
                let b_on_a = score(&b, &mut scored, &history_a).await?;
                compared(&step_a.logits, &b_on_a, step_a.choice.token)
            }
        };
        let settings = job.settings.clone();
        let side = |step: &Step, history: &[u32], tokenizer: &Tokenizer| Side {
            input: kept(step, history, &settings),
            id: step.choice.token,
            token: tokenizer.decode(&[step.choice.token]).unwrap_or_default(),
        };
        let row = StepRow {
            a: side(&step_a, &history_a, &tokenizer_a),
            b: side(&step_b, &history_b, &b.tokenizer),
            kl,
            same_top1,
            same_context,
        };
        history_a.push(step_a.choice.token);
        history_b.push(step_b.choice.token);
        for (text, step) in sinks.texts.iter().zip([&step_a, &step_b]) {
            text.update(|t| t.push_str(&step.text));
        }
        sinks.steps.update(|s| s.push(row));
        let eos = [("A", &step_a), ("B", &step_b)]
            .into_iter()
            .find(|(_, s)| s.done == Some(Done::Eos))
            .map(|(who, _)| format!("model {who} chose its end-of-text token: both stop there"));
        if eos.is_some() {
            sinks.ended.set(eos);
        }
        if step_a.done.is_some() || step_b.done.is_some() {
            break;
        }
        yield_to_browser().await;
    }
    Ok(())
}

/// KL(A ‖ B) of two models' logits over one vocabulary, and whether both put
/// the same token first (`next`: the token A drew).
fn compared(a: &[f32], b: &[f32], next: u32) -> (Option<f64>, Option<bool>) {
    let mut acc = DriftAcc::default();
    acc.add(a, b, next, 0);
    let drift = acc.finish();
    (Some(drift.kl_mean), Some(drift.same_top1 == 1.0))
}

/// Model B's logits after A's text `history`: its scoring session (opened on
/// the first call) reads the tokens it has not read yet.
async fn score(
    b: &ModelB,
    scored: &mut Option<Session>,
    history: &[u32],
) -> Result<Vec<f32>, String> {
    if scored.is_none() {
        *scored = Some(b.engine.session().map_err(err)?);
    }
    let session = scored.as_mut().expect("opened above");
    match &history[session.pos()..] {
        [token] => session.decode(*token).await.map_err(err),
        rest => session.prefill(rest, Wanted::Last).await.map_err(err),
    }
}

/// A step's logits after `history`, with the explanation it was drawn from.
fn kept(step: &Step, history: &[u32], settings: &engine::sample::Settings) -> StepInput {
    let input = StepInput::new(Arc::new(step.logits.clone()), Arc::new(history.to_vec()));
    input.offer(settings, step.explanation.clone());
    input
}

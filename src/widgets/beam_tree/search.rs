//! The beam-tree lesson's run, on this page's engine and the loaded model: a
//! beam search step by step (its history published after every step, so
//! the tree grows as it runs), then a sampled text of the same length for
//! the same prompt.

use contract::Control;
use engine::beam::{
    path, ranked, BeamCost, BeamSearch, BeamSettings, BeamStep, Ends, Hypothesis, Scoring,
};
use engine::run::Run;
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::registry::Controls;
use crate::widgets::measuring::{err, prompt_ids, Progress};

/// The most steps the tree draws.
pub const MAX_STEPS: usize = 48;

/// What the search has recorded so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    /// (prompt_len) the prompt's token ids.
    pub prompt: Vec<u32>,
    /// What it was run with (`None`: nothing run yet).
    pub settings: Option<BeamSettings>,
    pub max_steps: usize,
    pub steps: Vec<BeamStep>,
    pub hypotheses: Vec<Hypothesis>,
    pub cost: BeamCost,
    pub done: bool,
    /// The end-of-text token (left out of a hypothesis's text).
    pub eos: Option<u32>,
}

impl Tree {
    /// The finished hypotheses, best first under `scoring`.
    pub fn ranked(&self, scoring: Scoring) -> Vec<(usize, f64)> {
        ranked(&self.hypotheses, scoring, self.prompt.len())
    }

    /// The best hypothesis's candidates, (step, rank) per step.
    pub fn best_path(&self, scoring: Scoring) -> Vec<(usize, usize)> {
        match self.ranked(scoring).first() {
            Some(&(i, _)) if self.done => path(&self.steps, self.hypotheses[i].node),
            _ => Vec::new(),
        }
    }

    /// Normalised score of the candidate at (step, rank): its cumulative
    /// log-probability over its length (`step + 1` new tokens) to the penalty.
    pub fn normalised(&self, scoring: Scoring, step: usize, rank: usize) -> f64 {
        scoring.score(self.steps[step].candidates[rank].cumulative, step + 1, self.prompt.len())
    }

    /// The tokens of the path to (step, rank).
    pub fn tokens_to(&self, node: (usize, usize)) -> Vec<u32> {
        path(&self.steps, node)
            .into_iter()
            .map(|(s, r)| self.steps[s].candidates[r].token)
            .collect()
    }
}

/// The scoring the controls ask for (tracked: a re-ranking follows them).
pub fn scoring(c: Controls) -> Scoring {
    Scoring {
        length_penalty: c.number(Control::LengthPenalty).get(),
        prompt_in_length: c.text(Control::PromptInLength).get() == "yes",
    }
}

/// Runs the search, then the sampled text.
pub async fn run(
    d: Driver,
    tree: RwSignal<Tree>,
    sampled: RwSignal<Option<String>>,
    progress: RwSignal<Progress>,
) -> Result<(), String> {
    tree.set(Tree::default());
    sampled.set(None);
    let (ids, _) = prompt_ids(d, "beam search continues it")?;
    let c = d.controls;
    let requested = c.number(Control::MaxTokens).get_untracked() as usize;
    let ends_at =
        Ends::from_name(&c.text(Control::EndsAt).get_untracked()).unwrap_or(Ends::EndOfText);
    let (session, eos, ends) = d.lab.with_value(|l| {
        let eos = l.model.config.eos_token_id;
        Ok::<_, String>((l.session()?, eos, ends_at.tokens(&l.tokenizer, eos).map_err(err)?))
    })?;
    let settings = BeamSettings {
        width: c.number(Control::Beams).get_untracked() as usize,
        max_new_tokens: requested.min(MAX_STEPS),
        scoring: untrack(|| scoring(c)),
        ends,
    };
    let mut search = BeamSearch::start(session, &ids, settings).await.map_err(err)?;
    let publish = |s: &BeamSearch| {
        tree.set(Tree {
            prompt: ids.clone(),
            settings: Some(s.settings().clone()),
            max_steps: s.max_steps(),
            steps: s.steps().to_vec(),
            hypotheses: s.hypotheses().to_vec(),
            cost: s.cost(),
            done: s.done(),
            eos,
        })
    };
    loop {
        let total = search.max_steps() + 1;
        let done = search.steps().len();
        progress.set(Progress {
            what: format!("beam search: step {} of at most {}", done + 1, total - 1),
            done,
            total,
        });
        let more = search.step().await.map_err(err)?;
        publish(&search);
        if !more || d.stop_asked() {
            break;
        }
        yield_to_browser().await;
    }
    if d.stop_asked() {
        return Ok(());
    }
    progress.set(Progress { what: "the sampled text".into(), done: 1, total: 2 });
    sampled.set(Some(sample(d, &ids, requested.min(MAX_STEPS)).await?));
    progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

/// The same prompt sampled with the page's settings and seed, as long.
async fn sample(d: Driver, ids: &[u32], max_tokens: usize) -> Result<String, String> {
    let (session, tokenizer) =
        d.lab.with_value(|l| Ok::<_, String>((l.session()?, l.tokenizer.clone())))?;
    let job = engine::run::Job { max_tokens, ..d.controls.job_untracked() };
    let mut run = Run::start_ids(session, ids.to_vec(), &job).await.map_err(err)?;
    let mut text = String::new();
    loop {
        let step = run.step(&tokenizer, None).await.map_err(err)?;
        text += &step.text;
        if step.done.is_some() || d.stop_asked() {
            return Ok(text);
        }
        yield_to_browser().await;
    }
}

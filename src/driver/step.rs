//! One run of the playground: its start from the prompt (prefill) and each
//! step (choose → show → decode), and what a step leaves in the signals: its
//! chip, the stats line, the next distribution.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use engine::generate::Crop;
use engine::model::ChatPrompt;
use engine::run::{Done, Run, Step};
use engine::sample::{first_stop, Settings};

use leptos::prelude::*;

use super::{Chip, Driver, Stats};
use crate::distribution::StepInput;

impl Driver {
    /// A fresh run from the prompt, or from the prompt plus the first `branch_at` chips.
    pub(super) async fn start(self, branch_at: Option<usize>) -> Result<(), String> {
        let c = self.controls;
        let session = self.lab.with_value(|l| l.session())?;
        let job = c.job_untracked();
        let read = self.read_prompt()?;
        let ids = match branch_at {
            None => read.ids,
            Some(at) => self.chips.with_untracked(|chips| match chips.get(at) {
                Some(chip) => chip.input.history.to_vec(),
                None => chips
                    .last()
                    .map(|l| [&l.input.history[..], &[l.id]].concat())
                    .unwrap_or_default(),
            }),
        };
        let run = Run::start_ids(session, ids, &job).await.map_err(|e| e.to_string())?;
        if let Some(crop) = run.prompt_crop {
            self.notice.set(Some(crop_notice("the prompt is longer than the context", crop)));
        }
        self.read(run, &read.end_of_turn);
        Ok(())
    }

    /// A run that has just read its prompt becomes the current one: it ends
    /// at `end_of_turn` too (a chat's reply, and a branch of it), the stats
    /// show that prefill, and the distribution its first choice.
    fn read(self, mut run: Run, end_of_turn: &[u32]) {
        run.end_at(end_of_turn);
        self.run_from.set_value(self.chips.with_untracked(Vec::len));
        let stats = run.session().last_stats();
        let stats = Stats {
            prefill_ms: stats.wall_ms,
            prompt_tokens: stats.tokens,
            n_positions: run.session().config().n_positions,
            ..self.stats_of(&run)
        };
        self.change_stats(|s| *s = stats);
        self.change_next(input_of(&run));
        self.run.set_value(Some(run));
    }

    /// The current run made a fresh one from the prompt without prefilling
    /// it again, when its cache still begins with this prompt's tokens (the
    /// run Reset or the page load started to show the first distribution, or
    /// the last generation): false, with nothing changed, when it cannot.
    pub(super) fn restart(self) -> Result<bool, String> {
        let Ok(ChatPrompt { ids, .. }) = self.read_prompt() else { return Ok(false) }; // `start` says why
        let job = self.controls.job_untracked();
        let mut taken = None;
        self.run.update_value(|r| taken = r.take());
        let Some(mut run) = taken else { return Ok(false) };
        let restarted = match run.restartable_prompt() == Some(&ids[..]) {
            true => run.restart(&job).map_err(|e| e.to_string()),
            false => Ok(false),
        };
        if restarted == Ok(true) {
            self.run_from.set_value(self.chips.with_untracked(Vec::len));
            if let Some(crop) = run.prompt_crop {
                self.notice.set(Some(crop_notice("the prompt is longer than the context", crop)));
            }
            self.change_stats(|s| {
                (s.context, s.kv_bytes) = (run.context_len(), run.session().kv_bytes_by_formula())
            });
            self.change_next(input_of(&run));
        }
        self.run.set_value(Some(run));
        restarted
    }

    /// Chat's next turn: the current run made a fresh one from the grown
    /// conversation, prefilling only the tokens its cache does not hold
    /// ([`Run::resume`]; a notice says how many were kept): false, with
    /// nothing changed, when it cannot (then [`start`](Self::start) reads it all).
    pub(super) async fn resume(self) -> Result<bool, String> {
        let Ok(read) = self.read_prompt() else { return Ok(false) }; // `start` says why
        let job = self.controls.job_untracked();
        let mut taken = None;
        self.run.update_value(|r| taken = r.take());
        let Some(mut run) = taken else { return Ok(false) };
        // An error leaves the run spent (its cache part rewound): it is dropped.
        let Some(kept) = run.resume(read.ids, &job).await.map_err(|e| e.to_string())? else {
            self.run.set_value(Some(run));
            return Ok(false);
        };
        self.notice.set(Some(format!(
            "the KV cache kept the conversation's first {kept} tokens: {} prefilled",
            run.session().last_stats().tokens
        )));
        self.read(run, &read.end_of_turn);
        Ok(true)
    }

    /// The prompt as a run reads it: as typed, or with `chat=yes` in the
    /// model's chat template ([`Lab::prompt`](crate::lab::Lab::prompt),
    /// whose notice is shown).
    fn read_prompt(self) -> Result<ChatPrompt, String> {
        let chat = untrack(|| self.controls.chat());
        let prompt = self.prompt.get_untracked();
        let (read, notice) = self.lab.with_value(|l| l.prompt(&prompt, chat.as_ref()))?;
        if notice.is_some() {
            self.notice.set(notice);
        }
        Ok(read)
    }

    /// The prompt as the output echoes it: the conversation as the model
    /// reads it in chat (tracked; rendered, not encoded, as the user types).
    pub fn echo(self) -> String {
        let Some(chat) = self.controls.chat() else { return self.prompt.get() };
        let prompt = self.prompt.get();
        self.lab.with_value(|l| l.conversation(&prompt, &chat)).unwrap_or(prompt)
    }

    /// One step of the current run; returns why the run ended, if it did.
    pub(super) async fn step(self, forced: Option<u32>) -> Result<Option<Done>, String> {
        let mut taken = None;
        self.run.update_value(|r| taken = r.take());
        let Some(mut run) = taken else {
            return Err("nothing to continue: press Generate or Step".into());
        };
        let tokenizer = self.lab.with_value(|l| l.tokenizer.clone());
        let settings = self.controls.settings_untracked();
        // The chip shows as soon as its token is chosen, while the model runs
        // on it: pushed by a task that runs once the step has handed its
        // token to the worker or the GPU and waits, so drawing it takes no
        // time from the model. If the model step fails, the chip goes again.
        let pending: Rc<Cell<Option<Chip>>> = Rc::default();
        let shown = Rc::new(Cell::new(false));
        let drawn_under = settings.clone();
        let show = |step: &Step, history: &[u32]| {
            pending.set(Some(self.chip(step, history, &drawn_under)));
            let (pending, shown) = (pending.clone(), shown.clone());
            leptos::task::spawn_local(async move {
                if let Some(chip) = pending.take() {
                    self.change_chips(|c| c.push(chip));
                    shown.set(true);
                }
            });
        };
        let result = match run.set_settings(settings) {
            Ok(()) => run.step_showing(&tokenizer, forced, show).await,
            Err(e) => Err(e),
        };
        let unshown = pending.take();
        let step = match result {
            Ok(step) => step,
            Err(e) => {
                if shown.get() {
                    self.change_chips(|c| {
                        c.pop();
                    });
                }
                self.run.set_value(Some(run));
                return Err(e.to_string());
            }
        };
        if let Some(chip) = unshown {
            self.change_chips(|c| c.push(chip));
        }
        if step.done == Some(Done::Stop) {
            self.hide_stop_string();
        }
        if let Some(crop) = step.crop {
            self.notice.set(Some(crop_notice("the context is full", crop)));
        }
        self.after_step(run);
        Ok(step.done)
    }

    /// The stats line and the next distribution after a step of `run`,
    /// which is put back.
    fn after_step(self, run: Run) {
        let last = run.session().last_stats();
        let remote = run.session().kind() == engine::session::Kind::Worker;
        self.change_stats(|s| {
            s.decode_ms = last.wall_ms;
            s.workers = remote.then_some(1 + usize::from(last.coworker));
            s.context = run.context_len();
            s.kv_bytes = run.session().kv_bytes_by_formula();
        });
        self.change_next(input_of(&run));
        self.run.set_value(Some(run));
    }

    /// The run stopped on a stop string: its chips (and anything after it)
    /// leave the output, which then reads like the CLI's text. A chip the
    /// stop string starts inside keeps its text up to there.
    fn hide_stop_string(self) {
        let stops = self.controls.job_untracked().stop;
        let from = self.run_from.get_value();
        self.change_chips(|chips| {
            let text: String =
                chips[from.min(chips.len())..].iter().map(|c| c.text.as_str()).collect();
            let Some(at) = first_stop(&text, &stops) else {
                return; // the stop string spans tokens the chips show differently
            };
            let mut start = 0;
            let mut keep = from;
            for chip in chips.iter_mut().skip(from) {
                if start >= at {
                    break;
                }
                let end = start + chip.text.len();
                if end > at {
                    chip.text.truncate(at - start);
                }
                start = end;
                keep += 1;
            }
            chips.truncate(keep);
        });
    }

    fn stats_of(&self, run: &Run) -> Stats {
        Stats {
            context: run.context_len(),
            kv_bytes: run.session().kv_bytes_by_formula(),
            ..Stats::default()
        }
    }

    /// The chip of a step's chosen token (`history`: the tokens it was
    /// chosen after, under `settings`). Its input is the distribution on
    /// view, which it was chosen from, and which now keeps the step's
    /// explanation for the panel (a copy when the view shows another).
    fn chip(self, step: &Step, history: &[u32], settings: &Settings) -> Chip {
        let history = &history[..step.history_len];
        let on_view = self.next.with_untracked(|next| {
            next.as_ref()
                .filter(|n| n.history[..] == *history && n.logits[..] == step.logits[..])
                .cloned()
        });
        let input = on_view.unwrap_or_else(|| {
            StepInput::new(Arc::new(step.logits.clone()), Arc::new(history.to_vec()))
        });
        input.offer(settings, step.explanation.clone());
        Chip {
            id: step.choice.token,
            text: self.lab.with_value(|l| l.token_text(step.choice.token)),
            prob: step.choice.prob,
            rank: step.choice.rank,
            input,
        }
    }
}

/// The crop in words (the CLI prints the same to stderr).
fn crop_notice(why: &str, crop: Crop) -> String {
    format!(
        "{why}: the model now sees the last {} tokens ({} earlier ones dropped)",
        crop.kept, crop.dropped
    )
}

/// The distribution a run chooses its next token from.
pub(super) fn input_of(run: &Run) -> StepInput {
    StepInput::new(Arc::new(run.logits().to_vec()), Arc::new(run.history().to_vec()))
}

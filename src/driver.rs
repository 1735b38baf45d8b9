//! The playground's state and the async loop that drives the model: start a
//! run from the prompt (prefill), step it (choose → append → decode), stream
//! steps into signals, yield to the browser between tokens so the page never
//! freezes, stop at once when asked. The run (GPU buffers, not `Send`) lives in
//! local storage and is taken out while a step awaits.

use std::sync::Arc;

use engine::run::{Done, Job, Run};
use engine::sample::Settings;
use leptos::prelude::*;

use crate::distribution::StepInput;
use crate::lab::Lab;
use crate::loader::yield_to_browser;

/// One generated token as the output shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chip {
    pub id: u32,
    pub text: String,
    pub prob: f64,
    pub rank: usize,
    /// What it was chosen from: its step's distribution can be redrawn.
    pub input: StepInput,
}

/// Live figures for the stats line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub prefill_ms: f64,
    pub prompt_tokens: usize,
    pub decode_ms: f64,
    pub tokens_per_s: f64,
    pub context: usize,
    pub n_positions: usize,
    pub kv_bytes: usize,
}

/// Every control the pipeline and the run read.
#[derive(Clone, Copy)]
pub struct Controls {
    pub temperature: RwSignal<f64>,
    pub top_k: RwSignal<f64>,
    pub top_p: RwSignal<f64>,
    pub min_p: RwSignal<f64>,
    pub repetition_penalty: RwSignal<f64>,
    pub max_tokens: RwSignal<f64>,
    pub seed: RwSignal<f64>,
    pub bars: RwSignal<f64>,
    pub stop: RwSignal<String>,
}

impl Controls {
    /// The playground's starting values (a widget may preset others).
    pub fn new() -> Controls {
        Controls {
            temperature: RwSignal::new(0.8),
            top_k: RwSignal::new(0.0),
            top_p: RwSignal::new(1.0),
            min_p: RwSignal::new(0.0),
            repetition_penalty: RwSignal::new(1.0),
            max_tokens: RwSignal::new(60.0),
            seed: RwSignal::new(1.0),
            bars: RwSignal::new(20.0),
            stop: RwSignal::new(String::new()),
        }
    }

    /// The sampling settings the controls describe.
    pub fn settings(&self) -> Settings {
        Settings {
            temperature: self.temperature.get(),
            top_k: self.top_k.get() as i64,
            top_p: self.top_p.get(),
            min_p: self.min_p.get(),
            repetition_penalty: self.repetition_penalty.get(),
            ..Settings::default()
        }
    }

    /// The run the controls describe: settings, seed, stop strings, length.
    pub fn job_untracked(&self) -> Job {
        Job {
            settings: self.settings_untracked(),
            seed: self.seed.get_untracked() as u64,
            stop: self.stops(),
            max_tokens: self.max_tokens.get_untracked() as usize,
        }
    }

    fn stops(&self) -> Vec<String> {
        // One stop string per line; "\n" typed literally means a newline.
        self.stop
            .get_untracked()
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.replace("\\n", "\n"))
            .collect()
    }
}

/// The playground's state: signals (for views) plus the run and the model.
#[derive(Clone, Copy)]
pub struct Driver {
    pub lab: StoredValue<Lab, LocalStorage>,
    run: StoredValue<Option<Run>, LocalStorage>,
    pub controls: Controls,
    pub prompt: RwSignal<String>,
    pub chips: RwSignal<Vec<Chip>>,
    /// The distribution for the next token (after the last chip).
    pub next: RwSignal<Option<StepInput>>,
    /// A chip whose distribution is on view instead of the next one.
    pub selected: RwSignal<Option<usize>>,
    pub generating: RwSignal<bool>,
    stop_asked: RwSignal<bool>,
    pub stats: RwSignal<Stats>,
    pub error: RwSignal<Option<String>>,
    /// Every finished generation, oldest first ("same seed, same text").
    pub runs: RwSignal<Vec<RunRecord>>,
}

/// One finished generation: what produced it and what it said.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub seed: u64,
    pub settings: String,
    pub prompt: String,
    pub text: String,
}

impl Driver {
    pub fn new(lab: Lab, controls: Controls, prompt: RwSignal<String>) -> Driver {
        Driver {
            lab: StoredValue::new_local(lab),
            run: StoredValue::new_local(None),
            controls,
            prompt,
            chips: RwSignal::new(Vec::new()),
            next: RwSignal::new(None),
            selected: RwSignal::new(None),
            generating: RwSignal::new(false),
            stop_asked: RwSignal::new(false),
            stats: RwSignal::new(Stats::default()),
            error: RwSignal::new(None),
            runs: RwSignal::new(Vec::new()),
        }
    }

    /// The GPU device was lost: carry on with the CPU engine. The prompt and
    /// every chip stay; the new session re-reads them (one prefill).
    pub fn fall_back_to_cpu(self, reason: String) {
        self.lab.update_value(|l| {
            l.fall_back_to_cpu(format!(
                "the GPU device was lost ({reason}); switched to the CPU engine"
            ))
        });
        self.stop();
        self.run.set_value(None);
        leptos::task::spawn_local(async move {
            // Let the step in flight fail or finish first, then resume on the CPU.
            while self.generating.get_untracked() {
                yield_to_browser().await;
            }
            self.launch(move |d| async move {
                let at = d.chips.with_untracked(|c| (!c.is_empty()).then_some(c.len()));
                d.start(at).await
            });
        });
    }

    /// Asks a running generation to stop after the step in flight.
    pub fn stop(&self) {
        self.stop_asked.set(true);
    }

    /// Whether Stop (or Reset) was pressed since the job started.
    pub fn stop_asked(&self) -> bool {
        self.stop_asked.get_untracked()
    }

    /// Forgets the output (the prompt stays) and reads the prompt again. A
    /// generation in flight is stopped first, so no late token reappears.
    pub fn reset(self) {
        self.stop();
        leptos::task::spawn_local(async move {
            while self.generating.get_untracked() {
                yield_to_browser().await;
            }
            self.chips.set(Vec::new());
            self.selected.set(None);
            self.run.set_value(None);
            self.launch(|d| async move { d.start(None).await.map(|_| ()) });
        });
    }

    /// Generates up to max-tokens tokens from the prompt, streaming them.
    pub fn generate(self) {
        self.chips.set(Vec::new());
        self.selected.set(None);
        self.launch(|d| async move {
            d.start(None).await?;
            let started = web_time::Instant::now();
            let mut steps = 0;
            while !d.stop_asked.get_untracked() {
                let done = d.step(None).await?;
                steps += 1;
                let secs = started.elapsed().as_secs_f64();
                d.stats.update(|s| s.tokens_per_s = steps as f64 / secs.max(1e-9));
                if done.is_some() {
                    break;
                }
                yield_to_browser().await;
            }
            d.record_run();
            Ok(())
        });
    }

    /// One token: drawn by the sampler, or `forced` (a clicked bar). With a
    /// past chip selected, branches from there instead.
    pub fn step_once(self, forced: Option<u32>) {
        self.launch(move |d| async move {
            if let Some(at) = d.selected.get_untracked() {
                d.selected.set(None);
                d.chips.update(|c| c.truncate(at));
                d.start(Some(at)).await?;
            } else if d.run.with_value(|r| r.is_none()) {
                d.start(None).await?;
            }
            d.step(forced).await.map(|_| ())
        });
    }

    /// Notes the finished generation in `runs`.
    fn record_run(self) {
        let c = self.controls;
        let s = c.settings_untracked();
        let record = RunRecord {
            seed: c.seed.get_untracked() as u64,
            settings: format!(
                "T {} · top-k {} · top-p {} · min-p {} · rep {} · max {}",
                s.temperature,
                s.top_k,
                s.top_p,
                s.min_p,
                s.repetition_penalty,
                c.max_tokens.get_untracked()
            ),
            prompt: self.prompt.get_untracked(),
            text: self.chips.with_untracked(|c| c.iter().map(|c| c.text.as_str()).collect()),
        };
        self.runs.update(|r| r.push(record));
    }

    /// Runs `job` unless one is running, flagging `generating` and catching errors.
    pub fn launch<F, Fut>(self, job: F)
    where
        F: FnOnce(Driver) -> Fut + 'static,
        Fut: std::future::Future<Output = Result<(), String>> + 'static,
    {
        if self.generating.get_untracked() {
            return;
        }
        self.generating.set(true);
        self.stop_asked.set(false);
        self.error.set(None);
        leptos::task::spawn_local(async move {
            if let Err(e) = job(self).await {
                self.error.set(Some(e));
            }
            self.generating.set(false);
        });
    }

    /// A fresh run from the prompt, or from the prompt plus the first `branch_at` chips.
    async fn start(self, branch_at: Option<usize>) -> Result<(), String> {
        let c = self.controls;
        let session = self.lab.with_value(|l| l.session())?;
        let job = c.job_untracked();
        let run = match branch_at {
            None => {
                let tokenizer = self.lab.with_value(|l| l.tokenizer.clone());
                let prompt = self.prompt.get_untracked();
                Run::start(session, &tokenizer, &prompt, &job).await
            }
            Some(at) => {
                let ids = self.chips.with_untracked(|chips| match chips.get(at) {
                    Some(chip) => chip.input.history.to_vec(),
                    None => chips
                        .last()
                        .map(|l| [&l.input.history[..], &[l.id]].concat())
                        .unwrap_or_default(),
                });
                Run::start_ids(session, ids, &job).await
            }
        }
        .map_err(|e| e.to_string())?;
        let stats = run.session().last_stats();
        self.stats.set(Stats {
            prefill_ms: stats.wall_ms,
            prompt_tokens: stats.tokens,
            n_positions: run.session().config().n_positions,
            ..self.stats_of(&run)
        });
        self.next.set(Some(input_of(&run)));
        self.run.set_value(Some(run));
        Ok(())
    }

    /// One step of the current run; returns why the run ended, if it did.
    async fn step(self, forced: Option<u32>) -> Result<Option<Done>, String> {
        let mut taken = None;
        self.run.update_value(|r| taken = r.take());
        let Some(mut run) = taken else {
            return Err("nothing to continue: press Generate or Step".into());
        };
        let tokenizer = self.lab.with_value(|l| l.tokenizer.clone());
        let settings = self.controls.settings_untracked();
        let result = match run.set_settings(settings) {
            Ok(()) => run.step(&tokenizer, forced).await,
            Err(e) => Err(e),
        };
        let step = match result {
            Ok(step) => step,
            Err(e) => {
                self.run.set_value(Some(run));
                return Err(e.to_string());
            }
        };
        let history = Arc::new(run.history()[..step.history_len].to_vec());
        let chip = Chip {
            id: step.choice.token,
            text: self.lab.with_value(|l| l.token_text(step.choice.token)),
            prob: step.choice.prob,
            rank: step.choice.rank,
            input: StepInput { logits: Arc::new(step.logits), history },
        };
        if step.done != Some(Done::Eos) {
            self.chips.update(|c| c.push(chip));
        }
        let last = run.session().last_stats();
        self.stats.update(|s| {
            s.decode_ms = last.wall_ms;
            s.context = run.context_len();
            s.kv_bytes = run.session().kv_bytes_in_use();
        });
        self.next.set(Some(input_of(&run)));
        self.run.set_value(Some(run));
        Ok(step.done)
    }

    fn stats_of(&self, run: &Run) -> Stats {
        Stats {
            context: run.context_len(),
            kv_bytes: run.session().kv_bytes_in_use(),
            ..Stats::default()
        }
    }
}

impl Controls {
    pub fn settings_untracked(&self) -> Settings {
        untrack(|| self.settings())
    }
}

fn input_of(run: &Run) -> StepInput {
    StepInput { logits: Arc::new(run.logits().to_vec()), history: Arc::new(run.history().to_vec()) }
}

//! The playground's state and the async loop that drives the model: start a
//! run from the prompt (prefill), step it (choose → show → decode: `step.rs`), stream
//! steps into signals (drawn at most every 50 ms while a job runs: `draw.rs`),
//! yield to the browser between tokens so the page never freezes, stop at
//! once when asked. The run (GPU buffers, not `Send`) lives in
//! local storage and is taken out while a step awaits.

use contract::Control;
use engine::run::Run;
use engine::session::Kind;
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::distribution::StepInput;
use crate::lab::{Backend, Lab};
use crate::registry::Controls;

mod draw;
mod step;

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
    /// CPU workers that computed the last step (2: with the coworker), in
    /// the CPU worker; `None` elsewhere.
    pub workers: Option<usize>,
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
    /// Jobs [`launch_when_idle`](Self::launch_when_idle) holds until the
    /// running one ends: the page is not idle while one waits (the status
    /// would read `ready` for the moment between a load and a view's read).
    queued: RwSignal<usize>,
    stop_asked: RwSignal<bool>,
    pub stats: RwSignal<Stats>,
    pub error: RwSignal<Option<String>>,
    /// Something the run did that the reader should know (the context crop).
    pub notice: RwSignal<Option<String>>,
    /// Index of the first chip of the current run (earlier ones are a
    /// branch's prefix): a stop string is looked for from there.
    run_from: StoredValue<usize>,
    /// A generation ended by an error (not by its end or Stop).
    unfinished: StoredValue<bool>,
    /// Every finished generation, oldest first ("same seed, same text").
    pub runs: RwSignal<Vec<RunRecord>>,
    /// What a running job changed that the views have not drawn yet (`draw.rs`).
    unshown: StoredValue<draw::Unshown>,
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
    pub fn new(lab: Lab, controls: Controls) -> Driver {
        Driver {
            lab: StoredValue::new_local(lab),
            run: StoredValue::new_local(None),
            controls,
            prompt: controls.text(Control::Prompt),
            chips: RwSignal::new(Vec::new()),
            next: RwSignal::new(None),
            selected: RwSignal::new(None),
            generating: RwSignal::new(false),
            queued: RwSignal::new(0),
            stop_asked: RwSignal::new(false),
            stats: RwSignal::new(Stats::default()),
            error: RwSignal::new(None),
            notice: RwSignal::new(None),
            run_from: StoredValue::new(0),
            unfinished: StoredValue::new(false),
            runs: RwSignal::new(Vec::new()),
            unshown: StoredValue::new(draw::Unshown::default()),
        }
    }

    /// The GPU device was lost: carry on with the CPU engine, in a CPU worker
    /// as after a CPU load (`on_backend` hears when it is up, or why not). The
    /// prompt, every chip and the run's draw stream stay: the run moves onto a
    /// CPU session (one prefill of its context), and a generation that was
    /// under way goes on, so the text is the one a CPU-only run with the same
    /// seed writes.
    pub fn fall_back_to_cpu(self, reason: String, on_backend: impl Fn(Backend) + 'static) {
        self.lab.update_value(|l| {
            l.fall_back_to_cpu(format!(
                "the GPU device was lost ({reason}); switched to the CPU engine"
            ))
        });
        leptos::task::spawn_local(async move {
            let worker = self.lab.with_value(|l| l.start_worker()).await;
            self.lab.update_value(|l| l.use_worker(worker));
            on_backend(self.lab.with_value(|l| l.backend.clone()));
            // Let the step in flight fail (its device is gone) or finish first.
            while self.generating.get_untracked() {
                yield_to_browser().await;
            }
            let interrupted = self.unfinished.get_value();
            self.launch(move |d| async move {
                d.resume_on_cpu().await?;
                if interrupted {
                    d.generate_steps().await?;
                }
                Ok(())
            });
        });
    }

    /// Moves the current run onto a fresh session of the (now CPU) engine,
    /// or re-reads prompt and chips when there is no run.
    async fn resume_on_cpu(self) -> Result<(), String> {
        let mut taken = None;
        self.run.update_value(|r| taken = r.take());
        let Some(mut run) = taken else {
            let at = self.chips.with_untracked(|c| (!c.is_empty()).then_some(c.len()));
            return self.start(at).await;
        };
        let session = self.lab.with_value(|l| l.session())?;
        let switched = run.switch_session(session).await.map_err(|e| e.to_string());
        self.change_next(step::input_of(&run));
        self.run.set_value(Some(run));
        switched
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
        self.read_again(false);
    }

    /// Stops, forgets the output, then reads the prompt: from scratch, or
    /// (`resume`, chat's next turn) keeping what the cache shares with it.
    fn read_again(self, resume: bool) {
        self.stop();
        leptos::task::spawn_local(async move {
            while self.generating.get_untracked() {
                yield_to_browser().await;
            }
            self.chips.set(Vec::new());
            self.selected.set(None);
            if !resume {
                self.run.set_value(None);
            }
            self.unfinished.set_value(false);
            self.launch(move |d| async move {
                if !(resume && d.resume().await?) {
                    d.start(None).await?;
                }
                Ok(())
            });
        });
    }

    /// Chat: the prompt and the model's reply (the output as it reads) join
    /// the earlier turns, and the prompt empties for the user's next turn;
    /// the run then reads the conversation, prefilling only what its KV
    /// cache does not already hold (all of it, as Reset does, where the
    /// conversation outgrew the context or the cache shares nothing).
    pub fn next_turn(self) {
        let ids: Vec<u32> = self.chips.with_untracked(|c| c.iter().map(|c| c.id).collect());
        let stops = self.controls.job_untracked().stop;
        let reply = self.lab.with_value(|l| l.reply_text(&ids, &stops));
        let turns = self.controls.text(Control::Turns);
        let mut all = contract::turns::turns(&turns.get_untracked());
        all.extend([self.prompt.get_untracked(), reply]);
        turns.set(contract::turns::turns_text(&all));
        self.prompt.set(String::new());
        self.read_again(true);
    }

    /// Generates up to max-tokens tokens from the prompt, streaming them.
    pub fn generate(self) {
        self.chips.set(Vec::new());
        self.selected.set(None);
        self.launch(|d| async move {
            if !d.restart()? {
                d.start(None).await?;
            }
            d.generate_steps().await
        });
    }

    /// Steps the current run until it ends or Stop is pressed, yielding to
    /// the browser between tokens; then notes the run in `runs`.
    async fn generate_steps(self) -> Result<(), String> {
        // Stays set if a step fails: a device-loss fallback then carries on.
        self.unfinished.set_value(true);
        let started = web_time::Instant::now();
        let mut steps = 0;
        while !self.stop_asked.get_untracked() {
            let done = self.step(None).await?;
            steps += 1;
            let secs = started.elapsed().as_secs_f64();
            self.change_stats(|s| s.tokens_per_s = steps as f64 / secs.max(1e-9));
            if done.is_some() {
                break;
            }
            // A step on the GPU or in the CPU worker already waited for an
            // answer, which gave the page its turn; only the in-page CPU
            // engine holds the thread from one step to the next.
            if self.run.with_value(|r| r.as_ref().map(|r| r.session().kind()) == Some(Kind::Cpu)) {
                yield_to_browser().await;
            }
        }
        self.unfinished.set_value(false);
        self.record_run();
        Ok(())
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
            seed: c.job_untracked().seed,
            settings: format!(
                "T {} · top-k {} · top-p {} · min-p {} · rep {} · freq {} · presence {} · no-repeat {} · max {}",
                s.temperature,
                s.top_k,
                s.top_p,
                s.min_p,
                s.repetition_penalty,
                s.frequency_penalty,
                s.presence_penalty,
                s.no_repeat_ngram,
                c.job_untracked().max_tokens
            ),
            prompt: self.prompt.get_untracked(),
            text: self.chips.with_untracked(|c| c.iter().map(|c| c.text.as_str()).collect()),
        };
        self.runs.update(|r| r.push(record));
    }

    /// `used` of `control` instead of the `asked` (the model or the widget
    /// allows no more: `limit` says what), with the notice every widget gives
    /// for it in the run's notice line. Returns `used`.
    pub fn limited(self, control: Control, asked: usize, used: usize, limit: &str) -> usize {
        if let Some(n) = control.spec().limited(asked as f64, used as f64, limit) {
            self.notice.set(Some(n));
        }
        used
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
        self.notice.set(None);
        leptos::task::spawn_local(async move {
            if let Err(e) = job(self).await {
                self.error.set(Some(e));
            }
            self.draw_job_end();
            self.generating.set(false);
        });
    }

    /// [`launch`](Self::launch) once whatever the driver is doing now has
    /// ended (a view that reads the model when the page loads or the prompt
    /// changes: Stop would end a job launched beside another).
    pub fn launch_when_idle<F, Fut>(self, job: F)
    where
        F: FnOnce(Driver) -> Fut + 'static,
        Fut: std::future::Future<Output = Result<(), String>> + 'static,
    {
        self.queued.update(|n| *n += 1);
        leptos::task::spawn_local(async move {
            yield_to_browser().await;
            while self.generating.get_untracked() {
                yield_to_browser().await;
            }
            self.queued.update(|n| *n -= 1);
            self.launch(job);
        })
    }

    /// A job runs or waits to (tracked: the status reads it).
    pub fn busy(self) -> bool {
        self.generating.get() || self.queued.get() > 0
    }
}

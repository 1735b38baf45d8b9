//! The batching lesson's measurement, on this page's engine and the loaded
//! model: continuations of one prompt (seeds S, S + 1, …) generated one
//! after another, then B at a time as one batched step per token, for
//! B = 1, 2, 4, 8; each batched continuation's text compared with its run
//! alone. Then the weight matrices applied to many vectors at once (a pass
//! over 1, 8, 32, 128 tokens), time per vector; and what one step is made
//! of: the weight bytes it reads at this device's measured read rate, its
//! dispatches at the measured cost of one, and (where the adapter has
//! timestamps) its GPU time.

use engine::lessons::cost::median;
use engine::run::{Done, Job, Run};
use engine::run_batch::BatchRun;
use engine::{DeviceFigures, Session, StepStats, Wanted};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, settle, Progress};

/// The batch sizes compared.
pub const SIZES: [usize; 4] = [1, 2, 4, 8];
/// Vectors per pass of the matrix experiment.
pub const PASS_ROWS: [usize; 4] = [1, 8, 32, 128];
/// Timed passes per point of the matrix experiment; the point is their median.
pub const RUNS: usize = 3;

/// One batch size's figures (decode steps only: the prompt's pass is shared).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub size: usize,
    /// Tokens per second of the `size` continuations run one after another.
    pub alone_tps: f64,
    /// Tokens per second of the same continuations as batched steps.
    pub batched_tps: f64,
    /// Median wall time of a batched step.
    pub step_ms: f64,
    /// A batched step's cost, summed over the run.
    pub steps: StepStats,
    pub n_steps: usize,
    /// Continuation i's batched text, and whether it equals its run alone.
    pub texts: Vec<(String, bool)>,
}

/// What one step is made of, measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Parts {
    /// Bytes of the weights a decode step reads (once per step, whatever the batch).
    pub weight_bytes: u64,
    /// Bytes of one sequence's KV cache rows a step after the prompt reads.
    pub kv_bytes: u64,
    /// This device's read rate, copy rate and per-dispatch cost.
    pub device: DeviceFigures,
}

/// What the measurement fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub rows: RwSignal<Vec<Row>>,
    /// (vectors per pass, ms per vector).
    pub passes: RwSignal<Vec<(usize, f64)>>,
    pub parts: RwSignal<Option<Parts>>,
    pub progress: RwSignal<Progress>,
}

/// One continuation alone: its text, decode steps and their summed wall time.
async fn alone(
    d: Driver,
    s: &Session,
    ids: &[u32],
    job: &Job,
) -> Result<(String, usize, f64), String> {
    let tokenizer = d.lab.with_value(|l| l.tokenizer.clone());
    let mut run = Run::start_ids(s.fork().map_err(err)?, ids.to_vec(), job).await.map_err(err)?;
    let (mut text, mut steps, mut ms) = (String::new(), 0, 0.0);
    loop {
        let step = run.step(&tokenizer, None).await.map_err(err)?;
        text += &step.text;
        // A decode step ran unless the model chose its end (no step) or the
        // context was full (a crop's prefill, not a decode step: the batch
        // crops outside its batched steps too).
        if step.done != Some(Done::Eos) && step.crop.is_none() {
            steps += 1;
            ms += run.session().last_stats().wall_ms;
        }
        if step.done.is_some() || d.stop_asked() {
            return Ok((text, steps, ms));
        }
        yield_to_browser().await;
    }
}

/// `size` continuations as one batch: (texts, decode steps' cost, their count, step times).
async fn batched(
    d: Driver,
    s: &Session,
    ids: &[u32],
    job: &Job,
    size: usize,
) -> Result<(Vec<String>, StepStats, Vec<f64>), String> {
    let tokenizer = d.lab.with_value(|l| l.tokenizer.clone());
    let mut run =
        BatchRun::start(s.fork().map_err(err)?, ids.to_vec(), job, size).await.map_err(err)?;
    let mut texts = vec![String::new(); size];
    let (mut total, mut times) = (StepStats::default(), Vec::new());
    while !run.done() && !d.stop_asked() {
        for (t, step) in texts.iter_mut().zip(run.step(&tokenizer).await.map_err(err)?) {
            *t += &step.map(|s| s.text).unwrap_or_default();
        }
        if let Some(stats) = run.last_step() {
            total.add(stats);
            times.push(stats.wall_ms);
        }
        yield_to_browser().await;
    }
    Ok((texts, total, times))
}

/// Runs the whole lesson.
pub async fn measure(d: Driver, sinks: Sinks) -> Result<(), String> {
    sinks.rows.set(Vec::new());
    sinks.passes.set(Vec::new());
    sinks.parts.set(None);
    let (ids, n_positions) = prompt_ids(d, "every continuation starts from it")?;
    let job = d.controls.job_untracked();
    let base = d.lab.with_value(|l| l.session())?;
    settle(&base, sinks.progress).await?;
    let largest = SIZES[SIZES.len() - 1];
    let total = largest + SIZES.len() + PASS_ROWS.len() + 1;
    let mut done = 0;
    let mut tick = |what: String| {
        sinks.progress.set(Progress { what, done, total });
        done += 1;
    };
    // Every seed alone once: B = 4 compares with the first four of them.
    let mut alone_runs = Vec::with_capacity(largest);
    for i in 0..largest {
        tick(format!("continuation {} alone", i + 1));
        let seeded = Job { seed: job.seed.wrapping_add(i as u64), ..job.clone() };
        alone_runs.push(alone(d, &base, &ids, &seeded).await?);
        if d.stop_asked() {
            return Ok(());
        }
    }
    for size in SIZES {
        tick(format!("{size} at a time"));
        let (texts, steps, times) = batched(d, &base, &ids, &job, size).await?;
        if d.stop_asked() {
            return Ok(());
        }
        let runs = &alone_runs[..size];
        let alone_tokens: usize = runs.iter().map(|r| r.1).sum();
        let alone_ms: f64 = runs.iter().map(|r| r.2).sum();
        sinks.rows.update(|rows| {
            rows.push(Row {
                size,
                alone_tps: alone_tokens as f64 / alone_ms * 1e3,
                batched_tps: steps.tokens as f64 / steps.wall_ms * 1e3,
                step_ms: median(&times).unwrap_or_default(),
                steps,
                n_steps: times.len(),
                texts: texts.into_iter().zip(runs).map(|(t, r)| (t.clone(), t == r.0)).collect(),
            })
        });
    }
    // What a B = 1 step reads: the weights, and the KV rows of the prompt and its token.
    let (weight_bytes, kv_bytes) = base.step_reads_at(ids.len());
    let mut s = base;
    for rows in PASS_ROWS.into_iter().filter(|&r| r < n_positions) {
        tick(format!("a pass over {rows} tokens"));
        let tokens: Vec<u32> = ids.iter().copied().cycle().take(rows).collect();
        let mut ms = Vec::with_capacity(RUNS);
        for _ in 0..=RUNS {
            s.rewind(0).map_err(err)?;
            s.prefill(&tokens, Wanted::Last).await.map_err(err)?;
            ms.push(s.last_stats().wall_ms);
            yield_to_browser().await;
        }
        // The first pass of each size is a warm-up (its first use of those rows).
        let per = median(&ms[1..]).unwrap_or_default() / rows as f64;
        sinks.passes.update(|p| p.push((rows, per)));
        if d.stop_asked() {
            return Ok(());
        }
    }
    tick("this device's read rate and dispatch cost".into());
    let device = s.device_figures().await.map_err(err)?;
    sinks.parts.set(Some(Parts { weight_bytes, kv_bytes, device }));
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

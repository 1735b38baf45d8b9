//! The prefill-decode lesson's measurements, on this page's engine and the
//! loaded model: (1) one greedy generation timed call by call, first on a
//! freshly opened session (cold: on the GPU its KV cache, uniform and
//! bind groups are new and the driver meets them first), then `WARM_RUNS`
//! times again on the same session; (2) time to first token against prompt
//! length, one pass and (when asked) token by token. Figures fill in as they
//! arrive; Stop ends a measurement between steps.

use engine::lessons::cost::{curve_lengths, cycled, median, Timeline};
use engine::sample::argmax;
use engine::{DeviceFigures, Session, StepStats, Wanted};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, settle, steps_in_room, Progress};

/// Warm runs after the cold one; the readouts are their medians.
pub const WARM_RUNS: usize = 3;
/// Timed prefills per prompt length of the curve (after one untimed).
pub const CURVE_RUNS: usize = 3;

/// How the prompt goes in (`prefill=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One forward pass over every prompt token.
    OnePass,
    /// One decode step per prompt token, as a model without prefill would.
    TokenByToken,
}

impl Mode {
    /// The `prefill=` value's mode (the control only offers the two names).
    pub fn from_name(name: &str) -> Mode {
        match name {
            "token-by-token" => Mode::TokenByToken,
            _ => Mode::OnePass,
        }
    }
}

/// One timed generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub timeline: Timeline,
    /// The one-pass prefill of the same prompt, timed too when the timeline's
    /// prompt went in token by token (the ratio the lesson is about).
    pub one_pass: Option<StepStats>,
    /// Bytes the decode steps had to read (weights and KV cache rows), summed.
    pub reads: u64,
}

/// One point of the time-to-first-token curve (medians of `CURVE_RUNS`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub n: usize,
    pub one_pass_ms: f64,
    pub by_token_ms: Option<f64>,
}

/// What the measurements fill in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    /// The cold run first, then the warm ones.
    pub runs: RwSignal<Vec<Run>>,
    /// The generated text, and whether every run wrote it.
    pub text: RwSignal<Option<(String, bool)>>,
    pub curve: RwSignal<Vec<Point>>,
    pub progress: RwSignal<Progress>,
    /// The GPU engine's pipeline compile at load (`None`: the CPU engine).
    pub compile_ms: RwSignal<Option<f64>>,
    /// This device's read rate (and the rest of its figures), measured after the runs.
    pub device: RwSignal<Option<DeviceFigures>>,
}

/// The prompt's pass from position 0, as `mode` feeds it: its last logits
/// and its cost, plus the one-pass cost when it went in token by token.
async fn prompt_pass(
    session: &mut Session,
    ids: &[u32],
    mode: Mode,
) -> Result<(Vec<f32>, StepStats, Option<StepStats>), String> {
    session.rewind(0).map_err(err)?;
    let logits = session.prefill(ids, Wanted::Last).await.map_err(err)?;
    let one_pass = session.last_stats();
    if mode == Mode::OnePass {
        return Ok((logits, one_pass, None));
    }
    yield_to_browser().await;
    session.rewind(0).map_err(err)?;
    let (logits, by_token) = session.prefill_by_decode(ids).await.map_err(err)?;
    Ok((logits, by_token, Some(one_pass)))
}

/// A greedy generation of `steps` tokens after the prompt, cold then warm.
pub async fn time_generation(
    d: Driver,
    sinks: Sinks,
    steps: usize,
    mode: Mode,
) -> Result<(), String> {
    sinks.runs.set(Vec::new());
    sinks.text.set(None);
    sinks.device.set(None);
    let (ids, n_positions) = prompt_ids(d, "the measurement starts from it")?;
    let steps = steps_in_room(d, steps, n_positions - ids.len());
    let mut session = d.lab.with_value(|l| l.session())?;
    settle(&session, sinks.progress).await?;
    sinks.compile_ms.set(session.pipeline_compile_ms());
    let mut first: Option<Vec<u32>> = None;
    let total = (1 + WARM_RUNS) * (steps + 1);
    for run in 0..=WARM_RUNS {
        let what = if run == 0 { "cold run".to_string() } else { format!("warm run {run}") };
        let progress = |done: usize| {
            let done = run * (steps + 1) + done;
            sinks.progress.set(Progress { what: what.clone(), done, total });
        };
        progress(0);
        yield_to_browser().await;
        let (mut logits, prefill, one_pass) = prompt_pass(&mut session, &ids, mode).await?;
        let mut timeline = Timeline { prefill, decode: Vec::with_capacity(steps) };
        let mut tokens = Vec::with_capacity(steps);
        let mut reads = 0;
        for step in 0..steps {
            if d.stop_asked() {
                return Ok(());
            }
            progress(step + 1);
            let token = argmax(&logits); // greedy: the lesson times, it does not sample
            tokens.push(token);
            let (weights, kv) = session.step_reads();
            reads += weights + kv;
            logits = session.decode(token).await.map_err(err)?;
            timeline.decode.push(session.last_stats());
            yield_to_browser().await;
        }
        sinks.runs.update(|r| r.push(Run { timeline, one_pass, reads }));
        let same = first.as_ref().is_none_or(|f| *f == tokens);
        let text = d.lab.with_value(|l| l.tokenizer.decode(&tokens)).map_err(err)?;
        sinks.text.update(|t| *t = Some((text, same && t.as_ref().is_none_or(|t| t.1))));
        first.get_or_insert(tokens);
    }
    sinks.progress.set(Progress { what: "this device's read rate".into(), done: total, total });
    sinks.device.set(Some(session.device_figures().await.map_err(err)?));
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

/// The median wall time of `CURVE_RUNS` prompt passes of `ids`, or `None` when stopped.
async fn median_pass(
    d: Driver,
    session: &mut Session,
    ids: &[u32],
    mode: Mode,
) -> Result<Option<f64>, String> {
    let mut ms = Vec::with_capacity(CURVE_RUNS);
    for _ in 0..CURVE_RUNS {
        if d.stop_asked() {
            return Ok(None);
        }
        session.rewind(0).map_err(err)?;
        let stats = match mode {
            Mode::OnePass => {
                session.prefill(ids, Wanted::Last).await.map_err(err)?;
                session.last_stats()
            }
            Mode::TokenByToken => session.prefill_by_decode(ids).await.map_err(err)?.1,
        };
        ms.push(stats.wall_ms);
        yield_to_browser().await;
    }
    Ok(median(&ms))
}

/// Time to first token for prompts of 1 … n_positions − 1 tokens (the
/// prompt's tokens repeated to length), point by point.
pub async fn ttft_curve(d: Driver, sinks: Sinks, mode: Mode) -> Result<(), String> {
    sinks.curve.set(Vec::new());
    let (ids, n_positions) = prompt_ids(d, "the measurement starts from it")?;
    let lengths = curve_lengths(n_positions - 1);
    let mut session = d.lab.with_value(|l| l.session())?;
    settle(&session, sinks.progress).await?;
    // One untimed pass: the session's first call is the cold one.
    session.prefill(&ids[..1], Wanted::Last).await.map_err(err)?;
    for (i, &n) in lengths.iter().enumerate() {
        sinks.progress.set(Progress {
            what: format!("prompts of {n} tokens"),
            done: i,
            total: lengths.len(),
        });
        let prompt = cycled(&ids, n);
        let Some(one_pass_ms) = median_pass(d, &mut session, &prompt, Mode::OnePass).await? else {
            return Ok(());
        };
        let by_token_ms = match mode {
            Mode::OnePass => None,
            Mode::TokenByToken => {
                match median_pass(d, &mut session, &prompt, Mode::TokenByToken).await? {
                    Some(ms) => Some(ms),
                    None => return Ok(()),
                }
            }
        };
        sinks.curve.update(|c| c.push(Point { n, one_pass_ms, by_token_ms }));
    }
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

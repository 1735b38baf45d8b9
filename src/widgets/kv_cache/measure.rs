//! The KV-cache lesson's measurement, on this page's engine and the loaded
//! model: for n = 1 … n_max, the decode step that makes the sequence n
//! tokens long, timed with the cache (one token through the model, keys and
//! values of the n − 1 before read from the cache) and without it (the whole
//! sequence through the model again, as a model with no cache must), each a
//! median of `RUNS`; both paths' logits compared at every measured step.
//! The sequence is the prompt, then greedy tokens. Points fill in as they
//! arrive; Stop ends the measurement between steps.

use contract::Control;
use engine::lessons::cost::{dense_then_spread, median};
use engine::sample::argmax;
use engine::Session;
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, settle, Progress};

/// Timed runs of each step; the point is their median.
pub const RUNS: usize = 3;
/// Steps up to here are all timed without the cache; past it, about this
/// many more evenly spaced (the uncached steps are what make the lesson long).
pub const DENSE: usize = 16;

/// One step's times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The sequence's length after the step.
    pub n: usize,
    pub cached_ms: f64,
    /// Timed at `DENSE` steps and a spread of the rest.
    pub uncached_ms: Option<f64>,
}

/// Both paths agree: the same next token, logits within rounding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    pub steps: usize,
    pub same_tokens: bool,
    pub max_abs_diff: f32,
}

/// The cache's size at the last step, three ways.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bytes {
    pub n: usize,
    /// 2 · n_layer · n_embd · 4 · n.
    pub formula: u64,
    /// Read from the engine's cache itself (`Session::kv_bytes`): the rows
    /// it holds, and its allocation.
    pub cache: engine::KvBytes,
}

/// What the measurement fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub points: RwSignal<Vec<Point>>,
    pub check: RwSignal<Option<Check>>,
    pub bytes: RwSignal<Option<Bytes>>,
    pub progress: RwSignal<Progress>,
}

/// The step with the cache `RUNS` times (going back one position in
/// between): the median wall time and the logits.
async fn cached_step(s: &mut Session, n: usize, token: u32) -> Result<(f64, Vec<f32>), String> {
    let mut ms = Vec::with_capacity(RUNS);
    let mut logits = Vec::new();
    for run in 0..RUNS {
        if run > 0 {
            s.rewind(n - 1).map_err(err)?;
        }
        logits = s.decode(token).await.map_err(err)?;
        ms.push(s.last_stats().wall_ms);
    }
    Ok((median(&ms).unwrap_or_default(), logits))
}

/// The step without the cache (`history` from position 0) `RUNS` times.
async fn uncached_step(s: &mut Session, history: &[u32]) -> Result<(f64, Vec<f32>), String> {
    let mut ms = Vec::with_capacity(RUNS);
    let mut logits = Vec::new();
    for _ in 0..RUNS {
        logits = s.decode_without_cache(history).await.map_err(err)?;
        ms.push(s.last_stats().wall_ms);
        yield_to_browser().await;
    }
    Ok((median(&ms).unwrap_or_default(), logits))
}

/// Times every step up to `up_to` (0: the whole context).
pub async fn measure(d: Driver, sinks: Sinks, up_to: usize) -> Result<(), String> {
    sinks.points.set(Vec::new());
    sinks.check.set(None);
    sinks.bytes.set(None);
    // The sequence is the prompt's first tokens when it is longer than n_max.
    let (ids, _) = prompt_ids(d, "the sequence starts with it")?;
    let config = d.lab.with_value(|l| l.model.config.clone());
    let last = config.n_positions - 1;
    let n_max = match up_to {
        0 => last,
        _ => d.limited(
            Control::UpTo,
            up_to,
            up_to.min(last),
            &format!("the context's last position, {last}"),
        ),
    };
    let mut cached = d.lab.with_value(|l| l.session())?;
    let mut uncached = d.lab.with_value(|l| l.session())?;
    settle(&cached, sinks.progress).await?;
    // One untimed call each: a session's first call is its cold one.
    for s in [&mut cached, &mut uncached] {
        s.decode(ids[0]).await.map_err(err)?;
        s.rewind(0).map_err(err)?;
    }
    let mut history: Vec<u32> = Vec::with_capacity(n_max);
    let mut logits: Vec<f32> = Vec::new();
    let mut check = Check { steps: 0, same_tokens: true, max_abs_diff: 0.0 };
    for n in 1..=n_max {
        if d.stop_asked() {
            return Ok(());
        }
        sinks.progress.set(Progress { what: format!("step n = {n}"), done: n - 1, total: n_max });
        let token = ids.get(n - 1).copied().unwrap_or_else(|| argmax(&logits));
        history.push(token);
        let (cached_ms, l) = cached_step(&mut cached, n, token).await?;
        logits = l;
        let uncached_ms = if dense_then_spread(n, n_max, DENSE) {
            yield_to_browser().await;
            let (ms, without) = uncached_step(&mut uncached, &history).await?;
            check.steps += 1;
            check.same_tokens &= argmax(&without) == argmax(&logits);
            let diff = without.iter().zip(&logits).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            check.max_abs_diff = check.max_abs_diff.max(diff);
            sinks.check.set(Some(check));
            Some(ms)
        } else {
            None
        };
        sinks.points.update(|p| p.push(Point { n, cached_ms, uncached_ms }));
        let cache = cached.kv_bytes().await.map_err(err)?;
        let formula = (2 * config.n_layer * config.n_embd * 4 * n) as u64;
        sinks.bytes.set(Some(Bytes { n, formula, cache }));
        yield_to_browser().await;
    }
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

//! The lesson's figures, measured on this page's engine: every weight format
//! of the loaded model opened as its own session (and on the CPU engine
//! int8 and int4 again, multiplying 8-bit activations), then (1) its weight bytes,
//! (2) greedy decoding from the prompt, timed per token, and the first step
//! where its text leaves f32's, (3) its next-token distributions over the
//! held-out passage, window by window, against f32's. Rows fill in as the
//! figures arrive; Stop ends the run between steps.

use engine::lessons::cost::median;
use engine::lessons::quality::{windows, Drift, DriftAcc};
use engine::open::Engine;
use engine::sample::argmax;
use engine::storage::format::Format;
use engine::{Session, Wanted};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::lab::open_like;
use crate::load::model_files::HELDOUT_FILE;
use crate::widgets::measuring::{prompt_ids, settle, steps_in_room, Progress};

/// The reference every figure is relative to.
pub const REFERENCE: Kind = Kind { format: Format::F32, int8_activations: false };

/// What one row runs: the weights in a format, and whether its int8 or int4
/// matrices multiply 8-bit activations (the CPU engine's `--activations
/// int8`, as llama.cpp's Q8_0 and Q4_0: faster, other numbers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kind {
    pub format: Format,
    pub int8_activations: bool,
}

impl Kind {
    /// Every row `engine` runs: each format, then (the CPU engine's) each
    /// that 8-bit activations multiply.
    pub fn all(engine: &Engine) -> Vec<Kind> {
        let plain = Format::ALL.map(|format| Kind { format, int8_activations: false });
        let acts8 = Format::ALL
            .into_iter()
            .filter(|f| engine.takes_int8_activations() && f.takes_int8_activations())
            .map(|format| Kind { format, int8_activations: true });
        plain.into_iter().chain(acts8).collect()
    }

    /// Its name in the table and the sentences.
    pub fn name(self) -> String {
        match self.int8_activations {
            true => format!("{} · 8-bit activations", self.format.name()),
            false => self.format.name().to_string(),
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub kind: Kind,
    /// Bytes of every weight (matrices in the format, the rest f32).
    pub bytes: u64,
    /// Median wall time of a decode step (the first, cold step left out).
    pub ms_per_token: Option<f64>,
    /// Wall time of the prompt's prefill (a second one: the first is cold).
    pub prefill_ms: Option<f64>,
    /// Whether its decode steps shared their products with the CPU
    /// worker's coworker (which makes every variant the worker makes).
    pub coworker: Option<bool>,
    /// Where its greedy text leaves f32's.
    pub parts: Option<Parting>,
    /// Its drift from f32 over the held-out tokens scored so far.
    pub drift: Option<Drift>,
}

/// Where a greedy text first differs from the reference's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Parting {
    /// At this step (1-based).
    At(usize),
    /// Not within this many steps.
    Never(usize),
}

/// What the measurement needs from the page.
#[derive(Clone, Copy)]
pub struct Sinks {
    pub rows: RwSignal<Vec<Row>>,
    pub progress: RwSignal<Progress>,
    /// The held-out passage's size as scored: (tokens, bytes), or why not.
    pub heldout: RwSignal<Option<Result<(usize, usize), String>>>,
}

/// The loaded model as each of `kinds`, each with its session on this engine.
async fn open_all(d: Driver, sinks: Sinks, kinds: &[Kind]) -> Result<Vec<Session>, String> {
    let engine = d.lab.with_value(|l| l.engine());
    let mut sessions = Vec::new();
    for (i, &kind) in kinds.iter().enumerate() {
        sinks.progress.set(Progress {
            what: format!("packing and opening {}", kind.name()),
            done: i,
            total: kinds.len(),
        });
        yield_to_browser().await;
        let variant = d.lab.with_value(|l| match kind.int8_activations {
            true => l.variant_int8_activations(kind.format),
            false => l.variant(kind.format),
        })?;
        let bytes = variant.weights.bytes();
        sinks.rows.update(|rows| {
            rows.push(Row {
                kind,
                bytes,
                ms_per_token: None,
                prefill_ms: None,
                coworker: None,
                parts: None,
                drift: None,
            })
        });
        sessions.push(open_like(&engine, variant).await?);
    }
    Ok(sessions)
}

/// What the greedy steps measured so far on one session: written into its
/// row when the steps end or Stop ends them, so a stopped run keeps its
/// speed and parting columns for the steps it took.
#[derive(Clone, Default)]
struct Track {
    prefill_ms: f64,
    tokens: Vec<u32>,
    ms: Vec<f64>,
    coworker: bool,
}

/// The speed and parting columns of the first rows, one per track; the
/// first track is the reference's.
fn write(tracks: &[Track], rows: &mut [Row]) {
    let Some(reference) = tracks.first().map(|t| &t.tokens) else { return };
    for (t, row) in tracks.iter().zip(rows.iter_mut()) {
        // Stopped mid-round, a session may have one step fewer than the reference.
        let common = t.tokens.len().min(reference.len());
        let parts = match t.tokens.iter().zip(reference).position(|(a, b)| a != b) {
            Some(at) => Some(Parting::At(at + 1)),
            None => (common > 0).then_some(Parting::Never(common)),
        };
        row.ms_per_token = median(&t.ms[1.min(t.ms.len())..]);
        row.prefill_ms = Some(t.prefill_ms);
        row.coworker = Some(t.coworker);
        row.parts = parts;
    }
}

/// Greedy decoding of `steps` tokens after `prompt` on every session: the
/// speed column and where each text parts from the reference's. The formats
/// take turns, one prefill or step each a round, so a GPU's clocks climbing
/// from idle (packing the formats leaves it idle) or a passing stall fall on
/// every format alike. Timed one after another on an H200 in Chromium, the
/// formats got faster down the table (f32 7.5 ms a step, f16 5.8, int8
/// 3.4), where the device widget, warmed up, measured f16 at 3.2.
async fn greedy(
    d: Driver,
    sinks: Sinks,
    sessions: &mut [Session],
    prompt: &[u32],
    steps: usize,
) -> Result<(), String> {
    let err = |e: engine::EngineError| e.to_string();
    let n = sessions.len();
    let (mut logits, mut tracks) = (vec![Vec::new(); n], vec![Track::default(); n]);
    // Twice, the second timed: a session's first prefill is cold (pipelines, memory).
    for _ in 0..2 {
        for (i, session) in sessions.iter_mut().enumerate() {
            session.rewind(0).map_err(err)?;
            logits[i] = session.prefill(prompt, Wanted::Last).await.map_err(err)?;
            tracks[i].prefill_ms = session.last_stats().wall_ms;
        }
    }
    'steps: for step in 0..steps {
        for (i, session) in sessions.iter_mut().enumerate() {
            if d.stop_asked() {
                break 'steps;
            }
            let what = format!("greedy decoding, step {} of {steps}", step + 1);
            sinks.progress.set(Progress { what, done: step * n + i, total: steps * n });
            let token = argmax(&logits[i]); // greedy decoding
            tracks[i].tokens.push(token);
            logits[i] = session.decode(token).await.map_err(err)?;
            tracks[i].ms.push(session.last_stats().wall_ms);
            tracks[i].coworker |= session.last_stats().coworker;
            yield_to_browser().await;
        }
    }
    sinks.rows.update(|rows| write(&tracks, rows));
    Ok(())
}

/// Every format's drift from the reference over the held-out passage (its
/// first `limit` tokens; 0 = all), updated after each window.
async fn held_out(
    d: Driver,
    sinks: Sinks,
    kinds: &[Kind],
    sessions: &mut [Session],
    limit: usize,
) -> Result<(), String> {
    let (source, tokenizer, config) =
        d.lab.with_value(|l| (l.source.clone(), l.tokenizer.clone(), l.model.config.clone()));
    let place = source.place(HELDOUT_FILE);
    let text = match source.get(HELDOUT_FILE, |_, _| {}).await {
        Ok(Some(bytes)) => {
            String::from_utf8(bytes).map_err(|_| format!("{place} is not UTF-8 text"))?
        }
        Ok(None) => {
            let why = format!("no held-out passage: the model folder has no {place}");
            sinks.heldout.set(Some(Err(why)));
            return Ok(());
        }
        Err(e) => {
            sinks.heldout.set(Some(Err(format!("no held-out passage: {e}"))));
            return Ok(());
        }
    };
    let mut tokens = tokenizer.encode(&text).map_err(|e| e.to_string())?;
    if limit > 0 {
        tokens.truncate(limit);
    }
    if tokens.len() < 2 {
        sinks.heldout.set(Some(Err("the held-out passage has fewer than 2 tokens".into())));
        return Ok(());
    }
    let bytes = tokenizer.decode(&tokens).map_err(|e| e.to_string())?.len();
    sinks.heldout.set(Some(Ok((tokens.len(), bytes))));
    let windows = windows(tokens.len(), config.n_positions);
    let mut accs = vec![DriftAcc::default(); sessions.len()];
    let vocab = config.vocab_size;
    for (k, w) in windows.iter().enumerate() {
        let ids = &tokens[w.start..][..w.len];
        let mut all = Vec::with_capacity(sessions.len());
        for (i, session) in sessions.iter_mut().enumerate() {
            if d.stop_asked() {
                return Ok(());
            }
            sinks.progress.set(Progress {
                what: format!(
                    "held-out window {} of {} in {}",
                    k + 1,
                    windows.len(),
                    kinds[i].name()
                ),
                done: k * kinds.len() + i,
                total: windows.len() * kinds.len(),
            });
            session.rewind(0).map_err(|e| e.to_string())?;
            all.push(session.prefill(ids, Wanted::All).await.map_err(|e| e.to_string())?);
            yield_to_browser().await;
        }
        // Row r predicts token r + 1 of the window; the last row has no target here.
        for r in w.scored_from..w.len - 1 {
            let reference = &all[0][r * vocab..][..vocab];
            for (acc, logits) in accs.iter_mut().zip(&all) {
                let next = ids[r + 1];
                acc.add(
                    reference,
                    &logits[r * vocab..][..vocab],
                    next,
                    tokenizer.token_bytes(next),
                );
            }
        }
        sinks.rows.update(|rows| {
            for (row, acc) in rows.iter_mut().zip(&accs) {
                row.drift = Some(acc.clone().finish());
            }
        });
    }
    Ok(())
}

/// Runs every measurement, filling `sinks` as figures arrive.
pub async fn measure(d: Driver, sinks: Sinks, steps: usize, limit: usize) -> Result<(), String> {
    sinks.rows.set(Vec::new());
    sinks.heldout.set(None);
    let (ids, n_positions) = prompt_ids(d, "greedy decoding starts from it")?;
    let steps = steps_in_room(d, steps, n_positions - ids.len());
    let kinds = Kind::all(&d.lab.with_value(|l| l.engine()));
    let mut sessions = open_all(d, sinks, &kinds).await?;
    if let Some(first) = sessions.first() {
        settle(first, sinks.progress).await?;
    }
    greedy(d, sinks, &mut sessions, &ids, steps).await?;
    held_out(d, sinks, &kinds, &mut sessions, limit).await?;
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

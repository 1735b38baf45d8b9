//! The serving lesson's measurement, on this page's engine: one arrival
//! trace (typed, or a seeded Poisson process), every request first run
//! alone (its reference text), then the trace replayed under each chosen
//! scheduler on B slots (`engine::serve::replay`), the Gantt chart growing
//! step by step; each request's served text checked against its run alone.

use contract::Control;
use engine::sample::Settings;
use engine::serve::trace::Request;
use engine::serve::{figures, replay, run_alone, trace, Figures, Replay, Scheduler, PROMPTS};
use engine::{Batch, Session};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{err, prompt_ids, settle, steps_in_room, Progress};

/// One scheduler's replay of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Served {
    pub name: &'static str,
    pub replay: Replay,
    /// Filled in when the replay ends (not while it draws).
    pub figures: Option<Figures>,
    /// Each request's served text, and whether it equals its run alone.
    pub texts: Vec<(String, bool)>,
}

/// The trace as the page shows it: its requests and the prompts they name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub requests: Vec<Request>,
    pub prompts: Vec<String>,
}

/// What the measurement fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub trace: RwSignal<Trace>,
    pub served: RwSignal<Vec<Served>>,
    pub progress: RwSignal<Progress>,
}

/// The schedulers `scheduler=` names, with their names as the page shows them.
fn schedulers(choice: &str, wait: usize) -> Vec<(&'static str, Scheduler)> {
    let all = [
        ("one at a time", Scheduler::Once),
        ("static", Scheduler::Static { timeout: wait }),
        ("continuous", Scheduler::Continuous),
    ];
    match choice {
        "once" => all[..1].to_vec(),
        "static" => all[1..2].to_vec(),
        "continuous" => all[2..].to_vec(),
        _ => all.to_vec(),
    }
}

/// The trace the controls describe, its prompts' ids, and the settings.
fn trace_of(d: Driver) -> Result<(Trace, Vec<Vec<u32>>), String> {
    let c = d.controls;
    let (mine, n_positions) = prompt_ids(d, "the trace's prompt 0 is yours")?;
    let texts: Vec<String> = std::iter::once(d.prompt.get_untracked())
        .chain(PROMPTS.iter().map(|p| p.to_string()))
        .collect();
    let mut ids = vec![mine];
    for p in &PROMPTS {
        ids.push(d.lab.with_value(|l| l.tokenizer.encode(p)).map_err(|e| e.to_string())?);
    }
    let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
    let room = n_positions.saturating_sub(longest).max(1);
    let typed = c.text(Control::Trace).get_untracked();
    let requests = if typed.trim().is_empty() {
        let asked = c.number(Control::MaxTokens).get_untracked() as usize;
        let max_tokens = steps_in_room(d, asked, room);
        let n = c.number(Control::Requests).get_untracked() as usize;
        let rate = c.number(Control::Rate).get_untracked();
        let seed = c.number(Control::Seed).get_untracked() as u64;
        trace::poisson(n, rate, ids.len(), max_tokens, seed).map_err(err)?
    } else {
        let requests = trace::parse(&typed.replace(';', "\n"), ids.len()).map_err(|e| match e {
            // Its words already name the trace's line.
            engine::EngineError::Setting(why) => why,
            e => e.to_string(),
        })?;
        let most = match Control::Requests.spec().input {
            contract::Input::Number { range, .. } => range.max as usize,
            _ => usize::MAX,
        };
        if requests.len() > most {
            return Err(format!(
                "trace: {} requests; a trace holds at most {most}",
                requests.len()
            ));
        }
        if let Some(r) = requests.iter().find(|r| r.max_tokens > room) {
            return Err(format!(
                "trace: a request asks {} tokens; after the longest prompt this model has room for {room}",
                r.max_tokens
            ));
        }
        requests
    };
    Ok((Trace { requests, prompts: texts }, ids))
}

/// Each request served alone on `base`: the text every scheduler must give
/// it; `None` when Stop was pressed.
async fn alone(
    d: Driver,
    base: &mut Session,
    (requests, ids): (&[Request], &[Vec<u32>]),
    settings: &Settings,
    progress: &impl Fn(String, usize),
) -> Result<Option<Vec<Vec<u32>>>, String> {
    let mut reference = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        progress(format!("request {i} alone (its reference text)"), i);
        let text = run_alone(base, &ids[r.prompt], settings, r.seed, r.max_tokens).await;
        reference.push(text.map_err(err)?);
        yield_to_browser().await;
        if d.stop_asked() {
            return Ok(None);
        }
    }
    Ok(Some(reference))
}

/// Runs the whole lesson.
pub async fn measure(d: Driver, sinks: Sinks) -> Result<(), String> {
    sinks.served.set(Vec::new());
    let (shown, ids) = trace_of(d)?;
    let requests = shown.requests.clone();
    sinks.trace.set(shown);
    let settings = d.controls.settings_untracked();
    let c = d.controls;
    let choice = c.text(Control::Scheduler).get_untracked();
    let wait = c.number(Control::StaticWait).get_untracked() as usize;
    let slots = c.number(Control::Slots).get_untracked() as usize;
    let chosen = schedulers(&choice, wait);
    let mut base = d.lab.with_value(|l| l.session())?;
    settle(&base, sinks.progress).await?;
    let total = requests.len() + chosen.len();
    let progress = |what: String, done| sinks.progress.set(Progress { what, done, total });
    let Some(reference) = alone(d, &mut base, (&requests, &ids), &settings, &progress).await?
    else {
        return Ok(());
    };
    base.rewind(0).map_err(err)?;
    let eos = base.config().eos_token_id;
    let tokenizer = d.lab.with_value(|l| l.tokenizer.clone());
    for (n, (name, scheduler)) in chosen.into_iter().enumerate() {
        progress(format!("serving the trace: {name}"), requests.len() + n);
        let sessions = (0..slots).map(|_| base.fork()).collect::<Result<Vec<_>, _>>();
        let mut batch = Batch::new(sessions.map_err(err)?).map_err(err)?;
        sinks.served.update(|s| {
            s.push(Served { name, replay: Replay::default(), figures: None, texts: Vec::new() })
        });
        let on_step = |r: &Replay| {
            sinks.served.update(|s| s[n].replay = r.clone());
            !d.stop_asked()
        };
        let out = replay(&mut batch, &requests, &ids, &settings, scheduler, eos, on_step)
            .await
            .map_err(err)?;
        let texts = out
            .served
            .iter()
            .zip(&reference)
            .map(|(s, want)| Ok((tokenizer.decode(&s.tokens)?, s.tokens == *want)))
            .collect::<Result<Vec<_>, engine::EngineError>>()
            .map_err(err)?;
        let f = (!out.stopped).then(|| figures(&requests, &out));
        sinks.served.update(|s| {
            s[n] = Served { name, replay: out, figures: f, texts };
        });
        if d.stop_asked() {
            return Ok(());
        }
    }
    sinks.progress.set(Progress { what: "done".into(), done: 1, total: 1 });
    Ok(())
}

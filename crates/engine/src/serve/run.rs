//! Replaying a trace on the engine (issue 35, in progress): B slots of an
//! `engine::Batch`; each step the scheduler admits waiting requests into
//! free slots (each newcomer's prompt prefilled into its slot alone: the
//! round's first part), then one batched step advances every running
//! request a token (its second part). A request draws with its own sampler
//! (its seed), so its text is its run alone. Every slot's state at every
//! step is kept for the Gantt chart; `on_step` sees the replay after each
//! step (a page draws it and may stop it there).

use crate::batch::Batch;
use crate::error::Result;
use crate::sample::{Sampler, Settings};
use crate::session::Session;
use crate::step::Wanted;

use super::trace::Request;

/// How requests are admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// One request at a time (slot 0 only).
    Once,
    /// Wait for `batch` requests (or `timeout` steps after the oldest came),
    /// run them until all finish, then take the next batch.
    Static { timeout: usize },
    /// Admit into any free slot at every step.
    Continuous,
}

/// What a slot did in a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    Idle,
    /// A newcomer's prompt prefilled (request index).
    Prefill(usize),
    /// A token decoded for the request.
    Decode(usize),
    /// Held for a static batch whose request has already finished.
    Wasted,
}

/// One request's fate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Served {
    pub tokens: Vec<u32>,
    /// Steps at which it was admitted, had its first token, and ended.
    pub admitted: Option<usize>,
    pub first_token: Option<usize>,
    pub ended: Option<usize>,
    /// The same in wall milliseconds from the replay's start.
    pub first_token_ms: Option<f64>,
    pub ended_ms: Option<f64>,
}

/// A replay: every request's fate, and every step's cells (step, slot: the
/// slots the scheduler uses, so one for `Once`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replay {
    pub served: Vec<Served>,
    pub cells: Vec<Vec<Cell>>,
    /// (steps) when each step began, ms from the replay's start.
    pub step_ms: Vec<f64>,
    pub wall_ms: f64,
    /// Stopped by `on_step` before every request ended.
    pub stopped: bool,
}

/// A request running in a slot.
struct Running {
    request: usize,
    sampler: Sampler,
    history: Vec<u32>,
    logits: Vec<f32>,
}

/// Replays `trace` (prompts from `prompts`) on `batch` under `scheduler`;
/// `on_step` sees the replay after every step and stops it by returning false.
pub async fn replay(
    batch: &mut Batch,
    trace: &[Request],
    prompts: &[Vec<u32>],
    settings: &Settings,
    scheduler: Scheduler,
    eos: Option<u32>,
    mut on_step: impl FnMut(&Replay) -> bool,
) -> Result<Replay> {
    let start = web_time::Instant::now();
    let ms = || start.elapsed().as_secs_f64() * 1e3;
    let slots = match scheduler {
        Scheduler::Once => 1,
        _ => batch.len(),
    };
    let mut out = Replay { served: vec![Served::default(); trace.len()], ..Replay::default() };
    let mut running: Vec<Option<Running>> = (0..batch.len()).map(|_| None).collect();
    let mut static_held = vec![false; batch.len()]; // slots of the static batch in flight
    let (mut next, mut queue) = (0, std::collections::VecDeque::new());
    let mut step = 0;
    while out.served.iter().any(|s| s.ended.is_none()) {
        while next < trace.len() && trace[next].arrival <= step {
            queue.push_back(next);
            next += 1;
        }
        out.step_ms.push(ms());
        let mut cells = vec![Cell::Idle; slots];
        let free: Vec<usize> = (0..slots).filter(|&s| running[s].is_none()).collect();
        let admit = admitted(scheduler, free.len(), &queue, &static_held, trace, step);
        for &slot in &free[..admit] {
            let r = queue.pop_front().expect("admitted from the queue");
            let prompt = &prompts[trace[r].prompt];
            batch.rewind(slot, 0)?;
            let logits = batch.prefill(slot, prompt, Wanted::Last).await?;
            let sampler = Sampler::new(settings.clone(), trace[r].seed)?;
            running[slot] = Some(Running { request: r, sampler, history: prompt.clone(), logits });
            out.served[r].admitted = Some(step);
            cells[slot] = Cell::Prefill(r);
            if matches!(scheduler, Scheduler::Static { .. }) {
                static_held[slot] = true;
            }
        }
        let tokens = choose(&mut running, &mut out.served, &mut cells, trace, eos, step, &ms)?;
        release(&mut running, &out.served, &static_held, &mut cells);
        feed(batch, &tokens, &mut running).await?;
        if static_held.iter().zip(&running).all(|(_, r)| r.is_none()) {
            static_held.iter_mut().for_each(|h| *h = false);
        }
        out.cells.push(cells);
        step += 1;
        if !on_step(&out) {
            out.stopped = true;
            break;
        }
    }
    out.wall_ms = ms();
    Ok(out)
}

/// How many queued requests `scheduler` lets into `free` slots at `step`:
/// as many as fit, except that a static batch starts only when it is idle
/// and either full or its oldest request has waited `timeout` steps.
fn admitted(
    scheduler: Scheduler,
    free: usize,
    queue: &std::collections::VecDeque<usize>,
    static_held: &[bool],
    trace: &[Request],
    step: usize,
) -> usize {
    match scheduler {
        Scheduler::Once | Scheduler::Continuous => free.min(queue.len()),
        Scheduler::Static { timeout } => {
            let slots = static_held.len();
            let idle = static_held.iter().all(|h| !h);
            let waited = queue.front().is_some_and(|&r| step >= trace[r].arrival + timeout);
            match idle && (queue.len() >= slots || (waited && !queue.is_empty())) {
                true => queue.len().min(slots),
                false => 0,
            }
        }
    }
}

/// The batched step's choices: every running request chooses a token; one
/// that ends (the model's end token, or its `max_tokens`) feeds none.
/// (slots) the token each slot feeds.
fn choose(
    running: &mut [Option<Running>],
    served: &mut [Served],
    cells: &mut [Cell],
    trace: &[Request],
    eos: Option<u32>,
    step: usize,
    ms: &impl Fn() -> f64,
) -> Result<Vec<Option<u32>>> {
    let mut tokens = vec![None; running.len()];
    for (slot, run) in running.iter_mut().enumerate() {
        let Some(run) = run else { continue };
        let r = run.request;
        let choice = run.sampler.next(&run.logits, &run.history)?;
        let served = &mut served[r];
        if served.first_token.is_none() {
            served.first_token = Some(step);
            served.first_token_ms = Some(ms());
        }
        let done = Some(choice.token) == eos;
        if !done {
            served.tokens.push(choice.token);
            run.history.push(choice.token);
        }
        if done || served.tokens.len() >= trace[r].max_tokens {
            served.ended = Some(step);
            served.ended_ms = Some(ms());
        } else {
            tokens[slot] = Some(choice.token);
        }
        if cells[slot] == Cell::Idle {
            cells[slot] = Cell::Decode(r);
        }
    }
    Ok(tokens)
}

/// Frees the slots whose request ended; a slot the static batch still
/// holds idle is wasted this step.
fn release(
    running: &mut [Option<Running>],
    served: &[Served],
    static_held: &[bool],
    cells: &mut [Cell],
) {
    for (slot, run) in running.iter_mut().enumerate() {
        if run.as_ref().is_some_and(|run| served[run.request].ended.is_some()) {
            *run = None;
        }
        if run.is_none() && static_held[slot] && cells[slot] == Cell::Idle {
            cells[slot] = Cell::Wasted;
        }
    }
}

/// Feeds the chosen `tokens` (slots) in one batched decode step and keeps
/// each running request's next logits.
async fn feed(
    batch: &mut Batch,
    tokens: &[Option<u32>],
    running: &mut [Option<Running>],
) -> Result<()> {
    if tokens.iter().all(Option::is_none) {
        return Ok(());
    }
    let logits = batch.decode(tokens).await?;
    let vocab = logits.len() / tokens.iter().flatten().count();
    let active = tokens.iter().enumerate().filter(|(_, t)| t.is_some());
    for ((slot, _), row) in active.zip(logits.chunks_exact(vocab)) {
        if let Some(run) = &mut running[slot] {
            run.logits = row.to_vec();
        }
    }
    Ok(())
}

/// A request served alone on `session` (emptied first): its prompt, then up
/// to `max_tokens` tokens one step at a time from its own sampler on `seed`,
/// ending at the model's end token — the text every scheduler must give it
/// (and the speculative lesson's plain decoding).
pub async fn run_alone(
    session: &mut Session,
    prompt: &[u32],
    settings: &Settings,
    seed: u64,
    max_tokens: usize,
) -> Result<Vec<u32>> {
    session.rewind(0)?;
    let mut logits = session.prefill(prompt, Wanted::Last).await?;
    let mut sampler = Sampler::new(settings.clone(), seed)?;
    let eos = session.config().eos_token_id;
    let (mut history, mut out) = (prompt.to_vec(), Vec::new());
    while out.len() < max_tokens {
        let t = sampler.next(&logits, &history)?.token;
        if Some(t) == eos {
            break;
        }
        out.push(t);
        history.push(t);
        logits = session.decode(t).await?;
    }
    Ok(out)
}

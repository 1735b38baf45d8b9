//! What the measuring lessons (quantization, prefill-decode, kv-cache)
//! share: the prompt they start from, their editor (prompt, their buttons,
//! Stop, a progress bar, the error) and how far a measurement is.

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::controls::ControlsPanel;
use crate::driver::Driver;
use crate::playground::PromptEditor;

/// An engine error as the message a measuring lesson shows.
pub fn err(e: engine::EngineError) -> String {
    e.to_string()
}

/// The sentence on a decode step's share of the device's read rate (the
/// prefill-decode and batching lessons): `steps` the timed steps (their
/// median GPU time where every one has it, else their median wall time),
/// `bytes` what one step must read.
pub fn bandwidth_sentence(
    steps: &[engine::StepStats],
    bytes: f64,
    device: &engine::DeviceFigures,
) -> Option<String> {
    use engine::lessons::cost::{median, Bandwidth};
    let gpu: Option<Vec<f64>> = steps.iter().map(|s| s.gpu_ms).collect();
    let (ms, device_clock) = match gpu {
        Some(g) if !g.is_empty() => (median(&g)?, true),
        _ => (median(&steps.iter().map(|s| s.wall_ms).collect::<Vec<_>>())?, false),
    };
    let b = Bandwidth { bytes, ms, device_clock, read_bytes_per_s: device.read_bytes_per_s };
    // Only the GPU engine counts dispatches: its figures have a dispatch cost.
    let who = if device.dispatch_ms.is_some() { "this GPU" } else { "this CPU" };
    let s = b.sentence(who);
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".")
}

/// Waits until every step the lesson times will run the same way: the CPU
/// worker's first decode steps alternate between one worker and two while it
/// chooses (`engine::remote::pace`), and a timing lesson that began then would
/// mix both in its figures. Once per worker; instant on the other engines.
pub async fn settle(session: &engine::Session, progress: RwSignal<Progress>) -> Result<(), String> {
    if session.kind() == engine::session::Kind::Worker {
        progress.set(Progress { what: "choosing one CPU worker or two".into(), done: 0, total: 1 });
    }
    session.settle().await.map_err(err)
}

/// The prompt's token ids, refused (with `why`: what needs it) when empty or
/// when no step fits after it; and the model's context length.
pub fn prompt_ids(d: Driver, why: &str) -> Result<(Vec<u32>, usize), String> {
    let prompt = d.prompt.get_untracked();
    let ids = d.lab.with_value(|l| l.tokenizer.encode(&prompt)).map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Err(format!("type a prompt first: {why}"));
    }
    let n_positions = d.lab.with_value(|l| l.model.config.n_positions);
    if ids.len() >= n_positions {
        return Err(format!(
            "the prompt is {} tokens; this model reads at most {n_positions}, and a step needs one more: shorten it",
            ids.len()
        ));
    }
    Ok((ids, n_positions))
}

/// `max_tokens` as a lesson that decodes after the prompt can take it: 1 to
/// the `room` the context leaves, with the notice every widget gives when
/// it is cut.
pub fn steps_in_room(d: Driver, steps: usize, room: usize) -> usize {
    let limit = format!("the context's room after the prompt, 1–{room} tokens");
    d.limited(Control::MaxTokens, steps, steps.clamp(1, room), &limit)
}

/// `bytes` in the unit a reader compares with memory sizes (the calculators').
pub fn size(bytes: f64) -> String {
    match bytes {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b => format!("{:.0} KB", b / 1e3),
    }
}

/// The prompt (when shown), the lesson's buttons then Stop, the progress
/// bar while measuring, and the error a measurement ended with; then the
/// lesson's controls panel, unless the lesson places it itself.
#[component]
pub fn MeasureEditor(
    driver: Driver,
    shown: Shown,
    progress: RwSignal<Progress>,
    testid: &'static str,
    /// Whether to show the controls panel after the editor.
    #[prop(default = true)]
    controls: bool,
    children: Children,
) -> impl IntoView {
    let d = driver;
    let panel =
        controls.then(|| view! { <ControlsPanel controls=d.controls shown=shown.clone()/> });
    view! {
        <section class="editor">
            {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
            <div class="buttons">
                {children()}
                <button data-testid="stop-generation" disabled=move || !d.generating.get() on:click=move |_| d.stop()>"Stop"</button>
            </div>
            <ProgressBar progress=progress running=d.generating.into() testid=testid/>
            {move || d.error.get().map(|e| view! { <p class="error" role="alert" data-testid="error">{e}</p> })}
            {move || d.notice.get().map(|n| view! { <p class="note notice" role="status" data-testid="run-notice">{n}</p> })}
        </section>
        {panel}
    }
}

/// What is being measured, and how much of it is done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub what: String,
    pub done: usize,
    pub total: usize,
}

/// The bar, while `running` and something is counted.
#[component]
pub fn ProgressBar(
    progress: RwSignal<Progress>,
    running: Signal<bool>,
    testid: &'static str,
) -> impl IntoView {
    move || {
        let p = progress.get();
        (running.get() && p.total > 0).then(|| {
            view! {
                <div class="progress" data-testid=testid>
                    <progress max=p.total.to_string() value=p.done.to_string()></progress>
                    <span>{p.what}</span>
                </div>
            }
        })
    }
}

/// The panel of a measuring lesson's figures, opened by its legend: which
/// engine they were measured on (the page's backend), then what they are
/// (`then`).
#[component]
pub fn MeasuredPanel(
    driver: Driver,
    #[prop(optional, into)] then: String,
    children: Children,
) -> impl IntoView {
    let backend = driver.lab.with_value(|l| l.backend.label());
    let then = if then.is_empty() { then } else { format!(" {then}") };
    view! {
        <section class="panel">
            <p class="legend">{format!("Measured on this page's engine: {backend}.{then}")}</p>
            {children()}
        </section>
    }
}

//! The page shell: header (backend and adapter in use, status), the loading
//! progress bar, the no-WebGPU banner, errors with a retry, then the playground.
//!
//! URL parameters read here: `model` (a model directory, default the bundled
//! `models/shakespeare/`), `backend=cpu` (skip WebGPU), `prompt`, and every
//! control (`url_state.rs`).

use leptos::prelude::*;

use crate::custom_logits::{parse_logits, CustomLogits};
use crate::driver::{Controls, Driver};
use crate::lab::{load, Backend, Progress};
use crate::playground::Playground;
use crate::url_state::{self, query};

const DEFAULT_MODEL: &str = "models/shakespeare/";
/// A speaker line as the corpus writes them (name, full stop, newline).
const DEFAULT_PROMPT: &str = "Romeo.\n";

/// Where the page stands.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Loading(Progress),
    Ready(Backend),
    Error(String),
}

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let phase =
        RwSignal::new(Phase::Loading(Progress { what: "starting".into(), loaded: 0, total: None }));
    let driver = RwSignal::new_local(None::<Driver>);
    let prompt = RwSignal::new(query("prompt").unwrap_or_else(|| DEFAULT_PROMPT.to_string()));
    let controls = Controls {
        temperature: RwSignal::new(0.8),
        top_k: RwSignal::new(0.0),
        top_p: RwSignal::new(1.0),
        min_p: RwSignal::new(0.0),
        repetition_penalty: RwSignal::new(1.0),
        max_tokens: RwSignal::new(60.0),
        seed: RwSignal::new(1.0),
        bars: RwSignal::new(20.0),
        stop: RwSignal::new(String::new()),
    };
    let mut notices = url_state::apply(&controls);
    if let Some(raw) = query("logits") {
        match parse_logits(&raw) {
            Ok(logits) => {
                let labels: Vec<String> = query("labels")
                    .map(|l| l.split(',').map(str::to_string).collect())
                    .unwrap_or_default();
                return view! {
                    <header class="header">
                        <h1>"Decode Lab"</h1>
                        <span class="tagline">"the sampling pipeline on your own logits"</span>
                        <span class="status" data-testid="status" data-state="ready">"ready"</span>
                    </header>
                    <main>
                        <UrlNotices notices=notices/>
                        <CustomLogits logits=logits labels=labels controls=controls/>
                    </main>
                }
                .into_any();
            }
            Err(e) => notices.push(format!("{e}; showing the model instead")),
        }
    }
    // Set by the GPU's device-lost callback; the playground carries on on the CPU.
    let lost = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        if let (Some(reason), Some(d)) = (lost.get(), driver.get_untracked()) {
            d.fall_back_to_cpu(reason);
            phase.set(Phase::Ready(d.lab.with_value(|l| l.backend.clone())));
        }
    });
    let start = move || {
        phase.set(Phase::Loading(Progress { what: "starting".into(), loaded: 0, total: None }));
        leptos::task::spawn_local(async move {
            let base = query("model").map(|m| if m.ends_with('/') { m } else { m + "/" });
            let base = base.unwrap_or_else(|| DEFAULT_MODEL.to_string());
            let force_cpu = query("backend").as_deref() == Some("cpu");
            let on_lost = move |reason| lost.set(Some(reason));
            match load(&base, force_cpu, move |p| phase.set(Phase::Loading(p)), on_lost).await {
                Ok(lab) => {
                    let backend = lab.backend.clone();
                    let d = Driver::new(lab, controls, prompt);
                    driver.set(Some(d));
                    phase.set(Phase::Ready(backend));
                    d.reset(); // reads the prompt: the first distribution shows at once
                }
                Err(e) => phase.set(Phase::Error(e)),
            }
        });
    };
    start();
    let state = move || match phase.get() {
        Phase::Loading(_) => "loading",
        Phase::Error(_) => "error",
        Phase::Ready(_) if driver.get().is_some_and(|d| d.generating.get()) => "generating",
        Phase::Ready(_) => "ready",
    };
    view! {
        <header class="header">
            <h1>"Decode Lab"</h1>
            <span class="tagline">"see and feel how a GPT chooses its next token"</span>
            <span class="status" data-testid="status" data-state=state>{state}</span>
            {move || match phase.get() {
                Phase::Ready(b) => Some(view! { <BackendBadge backend=b/> }),
                _ => None,
            }}
        </header>
        <main>
            <UrlNotices notices=notices/>
            {move || match phase.get() {
                Phase::Loading(p) => view! { <LoadingBar progress=p/> }.into_any(),
                Phase::Error(e) => view! {
                    <div class="error-box" role="alert">
                        <p><strong>"The model could not be loaded. "</strong>{e}</p>
                        <button data-testid="retry" on:click=move |_| start()>"Retry"</button>
                    </div>
                }.into_any(),
                Phase::Ready(b) => view! {
                    {match b { Backend::Cpu { reason } => Some(view! { <NoWebGpuBanner reason=reason/> }), _ => None }}
                    {move || driver.get().map(|d| view! { <Playground driver=d/> })}
                }.into_any(),
            }}
        </main>
    }
    .into_any()
}

/// What the URL asked for but did not get, shown above everything.
#[component]
fn UrlNotices(notices: Vec<String>) -> impl IntoView {
    (!notices.is_empty()).then(|| {
        view! {
            <ul class="banner url-notices" role="status" data-testid="url-notices">
                {notices.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
            </ul>
        }
    })
}

#[component]
fn LoadingBar(progress: Progress) -> impl IntoView {
    let (value, max) = match progress.total {
        Some(t) if t > 0 => (progress.loaded as f64, t as f64),
        _ => (0.0, 1.0),
    };
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let detail = match progress.total {
        Some(t) => format!("{:.1} / {:.1} MiB", mib(progress.loaded), mib(t)),
        None if progress.loaded > 0 => format!("{:.1} MiB", mib(progress.loaded)),
        None => String::new(),
    };
    view! {
        <div class="loading" data-testid="loading">
            <p>{progress.what} " " {detail}</p>
            <progress max=max value=value></progress>
        </div>
    }
}

/// The header badge naming the backend and adapter in use.
#[component]
fn BackendBadge(backend: Backend) -> impl IntoView {
    let label = match &backend {
        Backend::WebGpu { adapter } => format!("WebGPU · {adapter}"),
        Backend::Cpu { .. } => "CPU (wasm)".to_string(),
    };
    view! { <span class="badge" data-testid="backend" data-backend=backend.kind()>{label}</span> }
}

/// Why WebGPU is not in use, and how to turn it on.
#[component]
fn NoWebGpuBanner(reason: String) -> impl IntoView {
    view! {
        <div class="banner" role="status">
            <strong>"WebGPU is not available, so the model runs on the CPU (slower, same results). "</strong>
            <details class="reason"><summary>"technical detail"</summary>{reason}</details>
            <ul>
                <li>"Chrome / Edge 113+: on by default; check chrome://gpu, or start with --enable-unsafe-webgpu."</li>
                <li>"Firefox 141+ (Windows) or Nightly: set dom.webgpu.enabled in about:config."</li>
                <li>"Safari 26+: on by default; earlier, enable WebGPU under Develop → Feature Flags."</li>
            </ul>
        </div>
    }
}

/// Adds a visible error to the page (used by the panic hook).
pub fn show_fatal(message: &str) {
    if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
        let div = body.owner_document().and_then(|d| d.create_element("pre").ok());
        if let Some(div) = div {
            div.set_class_name("fatal");
            div.set_attribute("data-testid", "fatal").ok();
            div.set_text_content(Some(&format!("Decode Lab stopped: {message}")));
            body.append_child(&div).ok();
        }
    }
}

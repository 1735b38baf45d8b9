//! The page shell: what the URL asks for (`route.rs`: playground or one
//! widget, full page or embed), the loading progress bar, the no-WebGPU
//! banner, errors with a retry, then the body. Full pages have a header and
//! a "Copy embed code" button; embeds a compact footer and report their
//! height to the parent page.
//!
//! URL parameters read here: `model` (a Hub id or model folder address,
//! default the bundled `models/shakespeare/`), `backend=cpu` (skip WebGPU), `prompt`, `logits` /
//! `labels` (custom-logits mode), and every control (`url_state.rs`).

use contract::{parse_sets, read_page, Route, Widget};
use engine::model::Config;
use leptos::html::Div;
use leptos::prelude::*;

use crate::custom_logits::CustomLogits;
use crate::driver::Driver;
use crate::embed::{report_height, EmbedCode, EmbedFooter};
use crate::lab::{load, Backend, CpuReason, LoadChoice, LoadError, Progress};
use crate::load::download::{size, BigDownload};
use crate::load::source::ModelSource;
use crate::picker::ModelPicker;
use crate::playground::Playground;
use crate::query::{query, with_opened};
use crate::registry::Controls;
use crate::selftest::{Outcome, SelfTestPanel};
use crate::url_state::{self, Share};
use crate::widgets::{Logits, Source, WidgetView};

const DEFAULT_MODEL: &str = "models/shakespeare/";

/// Where the page stands.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Loading(Progress),
    Ready(Backend),
    /// A big download waits for the user's yes.
    Confirm(BigDownload),
    /// Custom-logits mode: nothing to load.
    Logits,
    Error(String),
}

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let mut notices = Vec::new();
    let page = with_opened(read_page);
    let route = page.route;
    let controls = Controls::new();
    url_state::apply(&controls, page.values);
    provide_context(crate::widgets::Columns(page.columns));
    provide_context(crate::widgets::QuizQuestions(page.quiz));
    notices.extend(page.notices);
    let choice = LoadChoice {
        force_cpu: page.force_cpu,
        weights: page.weights,
        int8_activations: page.int8_activations,
        kernels: page.kernels,
        confirmed: false,
    };
    // `selftest=1`: filled in once the self-test has run, before the widget starts.
    let self_test = page.selftest.then(|| RwSignal::new(None::<(Outcome, Config)>));
    let logits = custom_logits(&route, &mut notices);
    let share = Share {
        route: StoredValue::new(route.clone()),
        controls,
        logits: StoredValue::new(logits.as_ref().map(|(_, raw)| raw.clone())),
        extra: RwSignal::new(Vec::new()),
        params: RwSignal::new(Vec::new()),
    };
    provide_context(share);
    share.follow_in_address_bar();

    let phase = RwSignal::new(match logits {
        Some(_) => Phase::Logits,
        None => Phase::Loading(Progress { what: "starting".into(), loaded: 0, total: None }),
    });
    let driver = RwSignal::new_local(None::<Driver>);
    let start = move || start_loading(phase, driver, controls, choice, self_test);
    let yes = LoadChoice { confirmed: true, ..choice };
    let confirm = move || start_loading(phase, driver, controls, yes, self_test);
    if logits.is_none() {
        start();
    }
    let state = Signal::derive(move || match phase.get() {
        Phase::Loading(_) | Phase::Confirm(_) => "loading",
        Phase::Error(_) => "error",
        Phase::Ready(_) if driver.get().is_some_and(Driver::busy) => "generating",
        Phase::Ready(_) | Phase::Logits => "ready",
    });
    // Once the model has loaded (its files are then in the page's cache, where
    // the service worker takes them from). A page of an author's logits alone
    // registers nothing: its worker would download a model the page never asked for.
    let model_ready = Signal::derive(move || matches!(phase.get(), Phase::Ready(_)));
    provide_context(crate::offline::start(model_ready));
    let title = route.widget.map_or("Playground", Widget::title);
    let shown = route.shown.clone();
    let widget = route.widget;
    let logits = logits.map(|(l, _)| l);
    let body = move || {
        match phase.get() {
        Phase::Loading(p) => view! { <LoadingBar progress=p/> }.into_any(),
        Phase::Confirm(d) => view! {
            <div class="confirm-box" role="alertdialog" data-testid="confirm-download">
                <p>{d.question()}</p>
                <button data-testid="confirm-yes" on:click=move |_| confirm()>{format!("Download {}", size(d.file_bytes))}</button>
                " "
                <a href="?" data-testid="confirm-no">"Back to the bundled model"</a>
            </div>
        }
        .into_any(),
        Phase::Error(e) => view! {
            <div class="error-box" role="alert">
                <p><strong>"The model could not be loaded. "</strong>{e}</p>
                <button data-testid="retry" on:click=move |_| start()>"Retry"</button>
            </div>
        }
        .into_any(),
        Phase::Logits => {
            let l = logits.expect("Phase::Logits is only set with logits");
            match widget {
                Some(w) => view! { <WidgetView widget=w source=Source::Logits(l) controls=controls shown=shown.clone()/> }.into_any(),
                None => view! { <CustomLogits logits=l controls=controls shown=shown.clone()/> }.into_any(),
            }
        }
        Phase::Ready(b) => {
            let shown = shown.clone();
            view! {
                {self_test.and_then(|s| s.get()).map(|(outcome, config)| view! { <SelfTestPanel outcome=outcome config=config/> })}
                {match b {
                    Backend::Cpu { reason: CpuReason::NoWebGpu(why), .. } => Some(view! { <NoWebGpuBanner reason=why/> }.into_any()),
                    Backend::Cpu { reason: CpuReason::Asked, held, .. } => Some(view! { <CpuAskedBanner int8_activations=held.int8_activations/> }.into_any()),
                    _ => None,
                }}
                {move || driver.get().map(|d| {
                    let shown = d.lab.with_value(|l| shown.for_model(l.chats()));
                    match widget {
                        Some(w) => view! { <WidgetView widget=w source=Source::Model(d) controls=controls shown=shown/> }.into_any(),
                        None => view! { <Playground driver=d shown=shown/> }.into_any(),
                    }
                })}
            }
            .into_any()
        }
    }
    };
    let backend = Signal::derive(move || match phase.get() {
        Phase::Ready(b) => Some(b.label()),
        Phase::Logits => Some("your logits".to_string()),
        _ => None,
    });
    let root = NodeRef::<Div>::new();
    if route.embed {
        report_height(root, widget.map_or("playground", Widget::name));
    }
    view! {
        <div class="app" class:embed=route.embed node_ref=root data-widget=widget.map_or("playground", Widget::name)>
            {(!route.embed).then(|| view! { <Header state=state backend=backend phase=phase/> })}
            <main>
                <UrlNotices notices=notices/>
                <StoreNotices/>
                {(!route.embed).then(|| widget.map(|w| view! {
                    <h2 class="widget-title">{w.title()}</h2>
                    <p class="lesson">{w.lesson()}</p>
                }))}
                <div data-testid="widget">{body}</div>
                {(!route.embed).then(|| view! { <EmbedCode title=title/> })}
            </main>
            {route.embed.then(|| view! { <EmbedFooter state=state backend=backend title=title/> })}
        </div>
    }
}

/// Loads the model (`model=`, default the bundled one), runs the self-test
/// if `self_test` is given, and starts a driver.
fn start_loading(
    phase: RwSignal<Phase>,
    driver: RwSignal<Option<Driver>, LocalStorage>,
    controls: Controls,
    choice: LoadChoice,
    self_test: Option<RwSignal<Option<(Outcome, Config)>>>,
) {
    // Set by the GPU's device-lost callback; the page carries on on the CPU.
    let lost = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        if let (Some(reason), Some(d)) = (lost.get(), driver.get_untracked()) {
            d.fall_back_to_cpu(reason, move |backend| phase.set(Phase::Ready(backend)));
            phase.set(Phase::Ready(d.lab.with_value(|l| l.backend.clone())));
        }
    });
    phase.set(Phase::Loading(Progress { what: "starting".into(), loaded: 0, total: None }));
    leptos::task::spawn_local(async move {
        let source = match model_source() {
            Ok(source) => source,
            Err(e) => return phase.set(Phase::Error(e)),
        };
        let on_lost = move |reason| lost.set(Some(reason));
        let progress = move |p| phase.set(Phase::Loading(p));
        match load(source, choice, progress, on_lost).await {
            Ok(mut lab) => {
                if let Some(shown) = self_test {
                    phase.set(Phase::Loading(Progress {
                        what: "running the on-device self-test".into(),
                        loaded: 0,
                        total: None,
                    }));
                    let outcome = match lab.self_test(self_test_fault()).await {
                        Some(report) => Outcome::Ran(report),
                        None => Outcome::NoGpu(match &lab.backend {
                            Backend::Cpu { reason, .. } => reason.text(),
                            Backend::WebGpu { .. } => {
                                "the self-test prompt did not tokenize".into()
                            }
                        }),
                    };
                    shown.set(Some((outcome, lab.model.config.clone())));
                }
                let backend = lab.backend.clone();
                let d = Driver::new(lab, controls);
                driver.set(Some(d));
                if query("test_hooks").as_deref() == Some("1") {
                    install_test_hooks(d);
                }
                phase.set(Phase::Ready(backend));
                d.reset(); // reads the prompt: the first distribution shows at once
            }
            Err(LoadError::Confirm(d)) => phase.set(Phase::Confirm(d)),
            Err(LoadError::Failed(e)) => phase.set(Phase::Error(e)),
        }
    });
}

/// The model `model=` names (a Hub id or a folder address), by default the bundled one.
fn model_source() -> Result<ModelSource, String> {
    let base = match query("model") {
        Some(m) => contract::model_base(&m)?,
        None => DEFAULT_MODEL.to_string(),
    };
    Ok(ModelSource { base })
}

/// `selftest_fault=KERNEL` (with `test_hooks=1` only): the self-test
/// corrupts that kernel's first result, to show a wrong kernel is caught.
fn self_test_fault() -> Option<engine::kernels::Kernel> {
    if query("test_hooks").as_deref() != Some("1") {
        return None;
    }
    engine::kernels::Kernel::from_name(&query("selftest_fault")?)
}

/// `window.decodeLabTest` for end-to-end tests (`test_hooks=1` only):
/// `loseGpuDevice()` destroys the WebGPU device mid-run; `wasmMemoryBytes()`
/// is the size of the wasm linear memory and `rustHeapBytes()` the bytes
/// allocated in it and not freed (the long-session test).
fn install_test_hooks(d: Driver) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let Some(window) = web_sys::window() else { return };
    let hooks = js_sys::Object::new();
    let lose = Closure::<dyn Fn()>::new(move || d.lab.with_value(|l| l.lose_gpu_device()));
    let _ = js_sys::Reflect::set(&hooks, &"loseGpuDevice".into(), lose.as_ref().unchecked_ref());
    lose.forget(); // lives as long as the page
    let memory = Closure::<dyn Fn() -> f64>::new(|| {
        let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
        memory.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64
    });
    let _ =
        js_sys::Reflect::set(&hooks, &"wasmMemoryBytes".into(), memory.as_ref().unchecked_ref());
    memory.forget();
    let heap = Closure::<dyn Fn() -> f64>::new(|| crate::alloc::in_use() as f64);
    let _ = js_sys::Reflect::set(&hooks, &"rustHeapBytes".into(), heap.as_ref().unchecked_ref());
    heap.forget();
    let _ = js_sys::Reflect::set(&window, &"decodeLabTest".into(), &hooks);
}

/// `logits=` (and `labels=`) if given, parsed, and usable by the widget
/// asked for; otherwise a notice says why the model runs instead.
fn custom_logits(
    route: &Route,
    notices: &mut Vec<String>,
) -> Option<(Logits, (String, Option<String>))> {
    let raw = query("logits")?;
    if let Some(w) = route.widget.filter(|w| w.needs_model()) {
        notices.push(format!(
            "logits: the {} widget runs the model, so the logits are not used",
            w.name()
        ));
        return None;
    }
    let labels = query("labels");
    match parse_sets(&raw, labels.as_deref(), notices) {
        Ok(parsed) => Some((Logits::new(parsed.sets, parsed.labels), (raw, labels))),
        Err(e) => {
            notices.push(format!("{e}; showing the model instead"));
            None
        }
    }
}

/// The full page's header: name, status, backend.
#[component]
fn Header(
    state: Signal<&'static str>,
    backend: Signal<Option<String>>,
    phase: RwSignal<Phase>,
) -> impl IntoView {
    view! {
        <header class="header">
            <h1><a href="?">"Decode Lab"</a></h1>
            <span class="tagline">"see and feel how a GPT chooses its next token"</span>
            <span class="status" data-testid="status" data-state=state>{state}</span>
            <ModelPicker current=model_source().map_or_else(|e| e, |s| s.label())/>
            {use_context::<RwSignal<crate::offline::Offline>>().map(|state| view! { <crate::offline::OfflineBadge state=state/> })}
            {move || match phase.get() {
                Phase::Ready(b) => Some(view! { <BackendBadge backend=b/> }.into_any()),
                _ => backend.get().map(|b| view! { <span class="badge">{b}</span> }.into_any()),
            }}
            <nav class="catalogue" aria-label="widgets">
                {Widget::all().map(|w| view! { <a href=format!("?widget={}", w.name())>{w.name()}</a> }).collect_view()}
            </nav>
        </header>
    }
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

/// What happened to stored files: a damaged copy fetched again, a full quota.
#[component]
fn StoreNotices() -> impl IntoView {
    let notices = crate::load::stored::notices();
    move || {
        let n = notices.get();
        (!n.is_empty()).then(|| {
            view! {
                <ul class="banner" role="status" data-testid="store-notices">
                    {n.into_iter().map(|t| view! { <li>{t}</li> }).collect_view()}
                </ul>
            }
        })
    }
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
    view! {
        <span class="badge" data-testid="backend" data-backend=backend.kind() data-weights=backend.weights()
            data-cpu-thread=backend.cpu_thread() data-cpu-workers=backend.cpu_workers()
            data-kernels=backend.kernels() title=backend.thread_note().or(backend.kernels_note())>
            {backend.label()}
        </span>
    }
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

/// The link chose the CPU engine (`backend=cpu`, or `activations=int8`,
/// which only it multiplies): say so, not that WebGPU is missing, and offer
/// the way back (without 8-bit activations).
#[component]
fn CpuAskedBanner(int8_activations: bool) -> impl IntoView {
    let why = match int8_activations {
        true => "The CPU engine runs because this link asks for 8-bit activations (activations=int8), which only it multiplies: faster here, slightly other numbers. ",
        false => "The CPU engine runs because this link asks for it (backend=cpu): slower, same results. ",
    };
    let back = |_| {
        crate::picker::navigate_with(&[("backend", None), ("activations", None)]);
    };
    view! {
        <div class="banner" role="status" data-testid="cpu-asked">
            <strong>{why}</strong>
            <button data-testid="use-webgpu" on:click=back>
                "Run on WebGPU instead"
            </button>
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

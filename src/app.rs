//! The page shell: header with the backend in use, and the engine status.
//! Probing the GPU is the first thing the app does, because it decides which
//! engine (WebGPU or the CPU fallback) everything else runs on.

use leptos::prelude::*;

/// Which engine the page runs on, and why.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    /// WebGPU adapter found: our WGSL kernels run on it.
    WebGpu { adapter: String },
    /// No usable WebGPU: the CPU engine runs in wasm.
    Cpu { reason: String },
}

async fn probe() -> Backend {
    match engine::gpu::GpuContext::new().await {
        Ok(ctx) => Backend::WebGpu { adapter: ctx.adapter_name() },
        Err(e) => Backend::Cpu { reason: e.to_string() },
    }
}

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    // Read once at start-up; a Memo is not needed.
    let backend = LocalResource::new(probe);
    view! {
        <header class="header">
            <h1>"Decode Lab"</h1>
            <span class="tagline">"see and feel how a GPT chooses its next token"</span>
            {move || match backend.get() {
                None => view! { <span data-testid="status" data-state="loading">"probing WebGPU…"</span> }.into_any(),
                Some(b) => view! { <BackendBadge backend=b/> }.into_any(),
            }}
        </header>
        <main>
            {move || backend.get().and_then(|b| match b {
                Backend::Cpu { reason } => Some(view! { <NoWebGpuBanner reason=reason/> }),
                Backend::WebGpu { .. } => None,
            })}
            <p class="note">
                "The engine is ready: GPT-2 forward passes in our own WGSL kernels with a GPU-resident KV cache, and a CPU twin. The playground arrives with the bundled model."
            </p>
        </main>
    }
}

/// The header badge naming the backend and adapter in use.
#[component]
fn BackendBadge(
    /// The probed backend.
    backend: Backend,
) -> impl IntoView {
    let (kind, label) = match &backend {
        Backend::WebGpu { adapter } => ("webgpu", format!("WebGPU · {adapter}")),
        Backend::Cpu { .. } => ("cpu", "CPU (wasm)".to_string()),
    };
    view! {
        <span data-testid="status" data-state="ready"></span>
        <span class="badge" data-testid="backend" data-backend=kind>{label}</span>
    }
}

/// Why WebGPU is not in use, and how to turn it on.
#[component]
fn NoWebGpuBanner(
    /// The error the probe reported.
    reason: String,
) -> impl IntoView {
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

/// Replaces the page with a visible error (used by the panic hook).
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

//! The device report: what `?widget=device` measured, as one JSON object
//! (Copy report, and `report=URL` for a harness), and sending it to the
//! page's own origin only.

use engine::DeviceFigures;
use serde::Serialize;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::load::times::LoadTimes;

/// Everything the widget measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceReport {
    /// The browser's user agent.
    pub browser: String,
    /// The page's engine in words (backend, adapter, kernels, weights).
    pub engine: String,
    /// `webgpu` or `cpu`.
    pub backend: &'static str,
    pub model: ModelFacts,
    /// How the page's load went, by part.
    pub load: LoadTimes,
    /// A fresh session's prefill of the page's prompt and its first choice.
    pub first_token_ms: f64,
    /// The kernels in use and why (the GPU engine only).
    pub kernels: Option<String>,
    /// Each kernel profile the chooser would time here (or the CPU engine).
    pub profiles: Vec<ProfileRow>,
    pub device: DeviceRates,
}

/// The model measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelFacts {
    pub source: String,
    pub format: String,
    pub params: usize,
    pub weight_bytes: u64,
}

/// One profile's figures (or why it could not run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileRow {
    pub profile: String,
    /// Compiling its pipelines when it was opened (the GPU engine only).
    pub pipelines_ms: Option<f64>,
    pub prefill_tokens: usize,
    pub prefill_ms_per_token: f64,
    pub decode_steps: usize,
    /// Medians over the steps: wall, and the device's own time where it has timestamps.
    pub decode_ms_per_token: f64,
    pub decode_gpu_ms_per_token: Option<f64>,
    pub error: Option<String>,
}

/// The device's own rates (`Session::device_figures`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceRates {
    /// The read and copy rates and a dispatch's cost, as the engine measured them.
    #[serde(flatten)]
    pub figures: DeviceFigures,
    /// The read rate as a share of the card's published peak, where the adapter names a known card.
    pub read_of_published_peak: Option<String>,
}

/// `raw` read against the page's address, if it is on the page's own origin
/// (a harness serves the page and takes the report); else why not. A report
/// names the machine it ran on: it never leaves for another site.
pub fn same_origin(raw: &str) -> Result<String, String> {
    let location = web_sys::window().ok_or("no window")?.location();
    let (href, origin) = (location.href(), location.origin());
    let (href, origin) = (href.map_err(|_| "no page address")?, origin.map_err(|_| "no origin")?);
    let shown = contract::echo(raw);
    let url = web_sys::Url::new_with_base(raw, &href)
        .map_err(|_| format!("report={shown} is not an address"))?;
    if url.origin() != origin {
        return Err(format!(
            "report={shown}: the report is sent only to this page's own origin ({origin}), not to {}",
            url.origin()
        ));
    }
    Ok(url.href())
}

/// POSTs `json` to `url` (already checked by [`same_origin`]); the HTTP status.
pub async fn send(url: &str, json: &str) -> Result<u16, String> {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&wasm_bindgen::JsValue::from_str(json));
    let request = web_sys::Request::new_with_str_and_init(url, &init)
        .map_err(|_| format!("cannot make a request to {url}"))?;
    let _ = request.headers().set("content-type", "application/json");
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_request(&request))
        .await
        .map_err(|_| format!("the report could not be sent to {url}"))?;
    let response: web_sys::Response =
        response.dyn_into().map_err(|_| "the report's answer was not a response")?;
    Ok(response.status())
}

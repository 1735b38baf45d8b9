//! How long the page took to become ready, by part: what the device report
//! (`?widget=device`) shows as time to interactive.

use serde::Serialize;

/// The parts of a model's load, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LoadTimes {
    /// Asking the browser for a WebGPU adapter and device.
    pub probe_ms: f64,
    /// Fetching the model's files (from the network or the page's cache).
    pub download_ms: f64,
    /// Checking them and packing the weights into the chosen format.
    pub prepare_ms: f64,
    /// Opening the engine: on the GPU the upload, the pipelines and the
    /// kernel choice; else starting the CPU worker with its own copy.
    pub engine_ms: f64,
    /// When the model was ready, from the page's start (navigation).
    pub ready_at_ms: f64,
}

/// Milliseconds since the page started (`performance.now()`), or 0 where unknown.
pub fn since_page_start() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// A stopwatch over the load's parts.
pub struct Laps(web_time::Instant);

impl Laps {
    pub fn start() -> Laps {
        Laps(web_time::Instant::now())
    }

    /// Milliseconds since the last lap (or the start), starting the next.
    pub fn lap(&mut self) -> f64 {
        let now = web_time::Instant::now();
        let ms = (now - self.0).as_secs_f64() * 1e3;
        self.0 = now;
        ms
    }
}

//! What `?widget=device` measures: a fresh session's first token, then each
//! kernel profile the chooser would time on this adapter (the cpu profile
//! alone on a software one; the CPU engine as it runs without WebGPU) — its
//! pipelines, a prompt's pass and decode steps — and the device's rates.

use engine::gpu::profile::is_software;
use engine::gpu::GpuSession;
use engine::kernels::choose::candidates;
use engine::kernels::KernelsChoice;
use engine::open::Engine;
use engine::{Session, Wanted};
use leptos::prelude::*;

use super::report::{DeviceRates, DeviceReport, ModelFacts, ProfileRow};
use crate::driver::Driver;
use crate::lab::Backend;
use crate::widgets::measuring::{err, prompt_ids, Progress};

/// Prompt tokens of each profile's pass (at most half the context).
const PREFILL_TOKENS: usize = 32;
/// Decode steps timed per profile, after one untimed.
const DECODE_STEPS: usize = 16;

/// Measures everything and returns the report.
pub async fn measure(d: Driver, progress: RwSignal<Progress>) -> Result<DeviceReport, String> {
    let (engine, backend, times, model, source) = d.lab.with_value(|l| {
        (l.engine(), l.backend.clone(), l.times, l.model.clone(), l.source.label())
    });
    let (ids, n_positions) = prompt_ids(d, "the first token is timed on it")?;
    let say =
        |what: String, done: usize, total: usize| progress.set(Progress { what, done, total });
    let sessions = profile_sessions(&engine, &backend).await;
    let total = sessions.len() + 2;
    say("the first token".into(), 0, total);
    let mut first = engine.session().map_err(err)?;
    let start = web_time::Instant::now();
    let logits = first.prefill(&ids, Wanted::Last).await.map_err(err)?;
    let _ = engine::sample::argmax(&logits);
    let first_token_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut profiles = Vec::new();
    for (i, (name, session)) in sessions.into_iter().enumerate() {
        if d.stop_asked() {
            return Err("stopped".into());
        }
        say(format!("the {name} profile"), i + 1, total);
        profiles.push(match session {
            Ok(s) => time_profile(s, &name, n_positions).await,
            Err(e) => failed(&name, e),
        });
    }
    say("the device's read rate".into(), total - 1, total);
    let figures = first.device_figures().await.map_err(err)?;
    let device = DeviceRates {
        read_of_published_peak: engine::peak::share(&backend.label(), figures.read_bytes_per_s),
        figures,
    };
    let (kernels, backend_name) = match &backend {
        Backend::WebGpu { kernels, .. } => (Some(kernels.describe()), "webgpu"),
        Backend::Cpu { .. } => (None, "cpu"),
    };
    let browser =
        web_sys::window().and_then(|w| w.navigator().user_agent().ok()).unwrap_or_default();
    let (format, weight_bytes) = first.weights();
    let model = ModelFacts {
        source,
        format: format.name().into(),
        params: model.config.n_params(),
        weight_bytes,
    };
    Ok(DeviceReport {
        browser,
        engine: backend.label(),
        backend: backend_name,
        model,
        load: times,
        first_token_ms,
        kernels,
        profiles,
        device,
    })
}

/// Each profile to time, with a fresh session in it: on the GPU the
/// chooser's candidates for this adapter (compiled now, over the same
/// weights); else the CPU engine as it runs.
async fn profile_sessions(
    engine: &Engine,
    backend: &Backend,
) -> Vec<(String, Result<Session, String>)> {
    let Engine::Gpu(gpu) = engine else {
        let name = backend.label().split(" · ").next().unwrap_or("CPU").to_string();
        return vec![(name, engine.session().map_err(err))];
    };
    let software = is_software(&gpu.ctx.adapter_info);
    let mut out = Vec::new();
    for profile in candidates(KernelsChoice::Auto, software, gpu.format(), None).0 {
        let model = match profile == gpu.profile() {
            true => Ok(gpu.clone()),
            false => gpu.with_profile(profile).await.map_err(err),
        };
        let session = model.and_then(|m| GpuSession::new(m).map(Session::from).map_err(err));
        out.push((profile.name(), session));
    }
    out
}

/// A pass of a fixed prompt, then decode steps (medians), on `s`.
async fn time_profile(mut s: Session, name: &str, n_positions: usize) -> ProfileRow {
    match time_steps(&mut s, n_positions).await {
        Ok(row) => {
            ProfileRow { profile: name.into(), pipelines_ms: s.pipeline_compile_ms(), ..row }
        }
        Err(e) => failed(name, e),
    }
}

async fn time_steps(s: &mut Session, n_positions: usize) -> Result<ProfileRow, String> {
    let vocab = s.config().vocab_size;
    let prompt_len = PREFILL_TOKENS.min(n_positions / 2).max(1);
    let steps = DECODE_STEPS.min(n_positions.saturating_sub(prompt_len + 2));
    let prompt: Vec<u32> = (0..prompt_len).map(|i| ((i * 7919 + 13) % vocab) as u32).collect();
    // Warm-up: the first pass of a session touches its buffers and pipelines.
    s.prefill(&prompt, Wanted::Last).await.map_err(err)?;
    s.rewind(0).map_err(err)?;
    let logits = s.prefill(&prompt, Wanted::Last).await.map_err(err)?;
    let prefill_ms = s.last_stats().wall_ms;
    let mut next = engine::sample::argmax(&logits);
    let (mut walls, mut gpus) = (Vec::new(), Vec::new());
    for step in 0..=steps {
        let logits = s.decode(next).await.map_err(err)?;
        next = engine::sample::argmax(&logits);
        let stats = s.last_stats();
        if step > 0 {
            walls.push(stats.wall_ms);
            gpus.extend(stats.gpu_ms);
        }
    }
    let median = |v: &[f64]| engine::lessons::cost::median(v).unwrap_or(f64::NAN);
    Ok(ProfileRow {
        profile: String::new(),
        pipelines_ms: None,
        prefill_tokens: prompt_len,
        prefill_ms_per_token: prefill_ms / prompt_len as f64,
        decode_steps: steps,
        decode_ms_per_token: median(&walls),
        decode_gpu_ms_per_token: (gpus.len() == walls.len() && !gpus.is_empty())
            .then(|| median(&gpus)),
        error: None,
    })
}

fn failed(name: &str, e: String) -> ProfileRow {
    ProfileRow {
        profile: name.into(),
        pipelines_ms: None,
        prefill_tokens: 0,
        prefill_ms_per_token: f64::NAN,
        decode_steps: 0,
        decode_ms_per_token: f64::NAN,
        decode_gpu_ms_per_token: None,
        error: Some(e),
    }
}

//! The kernel chooser's trials on a GPU (its rules, which need no GPU, are
//! `kernels::choose`). A software adapter (a CPU in disguise: lavapipe,
//! llvmpipe, SwiftShader, or any the driver calls a CPU) gets the cpu profile
//! without a trial. On any other the model is uploaded once, each
//! candidate's pipelines are compiled over the same buffers, and a few
//! decode steps of each are timed (today's shapes among them, so no GPU is
//! ever slower than before); the fastest is kept. The page remembers the
//! choice, so the trial runs once.

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::{GpuContext, GpuModel, GpuSession};
use crate::kernels::choose::{self, Trials};
pub use crate::kernels::choose::{Chosen, Memory, Reason, Trial};
use crate::kernels::{KernelsChoice, Profile};
use crate::step::{SharedModel, Wanted};

/// Whether the adapter is a CPU in disguise: the driver says so, or its name
/// is one of the software renderers this project meets.
pub fn is_software(info: &wgpu::AdapterInfo) -> bool {
    let names = [&info.name, &info.driver, &info.driver_info].map(|s| s.to_lowercase());
    let software = ["llvmpipe", "lavapipe", "swiftshader", "softpipe", "warp"];
    info.device_type == wgpu::DeviceType::Cpu
        || names.iter().any(|n| software.iter().any(|s| n.contains(s)))
}

/// Decode steps timed per candidate, after the untimed rounds of the warm-up.
const TIMED_STEPS: usize = 8;

/// How long untimed rounds run before any is timed: a GPU's clocks climb
/// from idle in tens to hundreds of milliseconds.
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(250);

/// The fewest untimed rounds: a CPU adapter's step is slow, so [`WARM_UP`]
/// alone would leave it too few.
const MIN_WARM_ROUNDS: usize = 2;

/// The most untimed rounds: a tiny model's step on a real GPU takes a
/// fraction of a millisecond, so rounds, not [`WARM_UP`], bound its warm-up.
const MAX_WARM_ROUNDS: usize = 400;

/// Uploads `model` to `ctx` and opens it with the kernels `choice` asks for
/// (the rules: [`choose`](crate::kernels::choose)); where the caller keeps
/// choices (`memory`: the page's), a timed one is kept for this adapter,
/// model shape, format and build of the kernels, and taken next time.
pub async fn open(
    ctx: GpuContext,
    model: SharedModel,
    choice: KernelsChoice,
    memory: Option<&dyn Memory>,
) -> Result<(Rc<GpuModel>, Chosen)> {
    let software = is_software(&ctx.adapter_info);
    let format = model.format();
    let key = choose::key(&choose::build_id(), &ctx.adapter_name(), &model.config, format);
    let mut trials = GpuTrials { ctx, model, opened: Vec::new() };
    let memory = memory.map(|m| (m, key.as_str()));
    let chosen = choose::choose(choice, software, format, memory, &mut trials).await;
    let chosen = chosen.map_err(EngineError::Gpu)?;
    let gpu = trials.opened.into_iter().find(|g| g.profile() == chosen.profile);
    let gpu = gpu.ok_or_else(|| EngineError::Gpu("the chosen kernels were not opened".into()))?;
    Ok((gpu, chosen))
}

/// The candidates run on the GPU: the model uploaded once, each profile's
/// pipelines compiled over the same buffers, and (timed) a few decode steps
/// of each.
struct GpuTrials {
    ctx: GpuContext,
    model: SharedModel,
    /// The models opened so far, one per profile.
    opened: Vec<Rc<GpuModel>>,
}

impl GpuTrials {
    /// The model with `profile`'s kernels: opened before, or now (uploaded
    /// the first time, sharing the first upload's buffers after).
    async fn with(&mut self, profile: Profile) -> Result<Rc<GpuModel>> {
        if let Some(g) = self.opened.iter().find(|g| g.profile() == profile) {
            return Ok(g.clone());
        }
        let gpu = match self.opened.first() {
            Some(first) => first.with_profile(profile).await?,
            None => GpuModel::new(self.ctx.clone(), self.model.clone(), profile).await?,
        };
        self.opened.push(gpu.clone());
        Ok(gpu)
    }
}

impl Trials for GpuTrials {
    async fn run(
        &mut self,
        candidates: &[Profile],
        time: bool,
    ) -> Vec<std::result::Result<f64, String>> {
        let mut gpus = Vec::new();
        for &profile in candidates {
            gpus.push(self.with(profile).await);
        }
        let results = match time {
            true => time_decodes(&gpus).await,
            false => gpus.into_iter().map(|g| g.map(|_| 0.0)).collect(),
        };
        results.into_iter().map(|r| r.map_err(|e| e.to_string())).collect()
    }
}

/// Each candidate's median decode step after a short prompt: GPU time where
/// the device has timestamps (what the kernels themselves cost), else wall
/// time. The candidates take turns, one step each a round, so a passing
/// stall falls on every candidate alike (timed one after another, the first
/// candidate once measured 4× slow on an H200 and lost). Untimed rounds run
/// first for [`WARM_UP`]: a GPU that idled while the weights were read and
/// quantised starts at its idle clocks, and on an H200 candidates timed
/// straight away measured 2.5 to 5× their later steps (bf16, int8, int4) or in
/// another order (Chromium kept gpu-8 at 1.46 ms of GPU time a step over
/// gpu-2 at 0.93). A session whose context is full
/// goes back to the end of its prompt, so a model with a short context (even
/// one position) is timed on as many steps as any other.
async fn time_decodes(gpus: &[Result<Rc<GpuModel>>]) -> Vec<Result<f64>> {
    let mut sessions: Vec<Result<(GpuSession, usize)>> = Vec::new();
    for gpu in gpus {
        sessions.push(match gpu {
            Ok(gpu) => prefilled(gpu).await,
            Err(e) => Err(EngineError::Gpu(e.to_string())),
        });
    }
    let mut times = vec![Vec::new(); gpus.len()];
    let start = web_time::Instant::now();
    let (mut step, mut timed) = (0, 0);
    while timed < TIMED_STEPS {
        let warm =
            step >= MAX_WARM_ROUNDS || (step >= MIN_WARM_ROUNDS && start.elapsed() >= WARM_UP);
        for (slot, times) in sessions.iter_mut().zip(&mut times) {
            let Ok((session, prompt)) = slot else { continue };
            let c = session.config();
            let token = (step % c.vocab_size) as u32;
            let decoded = match session.pos() < c.n_positions {
                true => session.decode(token).await,
                false => match session.rewind(*prompt) {
                    Ok(()) => session.decode(token).await,
                    Err(e) => Err(e),
                },
            };
            match decoded {
                Ok(_) if warm => {
                    let stats = session.last_stats();
                    times.push(stats.gpu_ms.unwrap_or(stats.wall_ms));
                }
                Ok(_) => {}
                Err(e) => *slot = Err(e),
            }
        }
        timed += usize::from(warm);
        step += 1;
    }
    let median = |(slot, times): (Result<(GpuSession, usize)>, Vec<f64>)| {
        slot?;
        crate::lessons::cost::median(&times)
            .ok_or_else(|| EngineError::Gpu("no decode step of this profile was timed".into()))
    };
    sessions.into_iter().zip(times).map(median).collect()
}

/// A session of `gpu` that has read a short prompt (up to 8 tokens, leaving
/// at least one position to decode into), and the prompt's length.
async fn prefilled(gpu: &Rc<GpuModel>) -> Result<(GpuSession, usize)> {
    let c = gpu.config();
    let prompt: Vec<u32> = (0..8.min(c.n_positions.saturating_sub(1)))
        .map(|i| (i * 7 % c.vocab_size) as u32)
        .collect();
    let mut session = GpuSession::new(gpu.clone())?;
    if !prompt.is_empty() {
        session.prefill(&prompt, Wanted::Last).await?;
    }
    Ok((session, prompt.len()))
}

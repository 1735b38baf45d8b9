//! Choosing the kernel profile for an adapter. A software adapter (a CPU in
//! disguise: lavapipe, llvmpipe, SwiftShader, or any the driver calls a CPU)
//! gets the cpu profile without a trial. Any other is timed: the model is
//! uploaded once, each candidate's pipelines are compiled over the same
//! buffers, and a few decode steps of each are timed (today's shapes among
//! them, so no GPU is ever slower than before); the fastest is kept. The page
//! remembers the choice per adapter, so the trial runs once.

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::{GpuContext, GpuModel, GpuSession};
use crate::kernels::{KernelsChoice, Profile, Split};
use crate::step::{SharedModel, Wanted};

/// Why the profile in use was chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// Asked for by name.
    Asked,
    /// The adapter is a CPU: the cpu profile, untimed.
    Software,
    /// Timed here, the fastest of the candidates.
    Timed,
    /// Timed before on this adapter (the page's memory).
    Remembered,
}

/// One candidate's trial: decode milliseconds per token (its median), or why
/// it could not run.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    pub profile: Profile,
    pub ms_per_token: std::result::Result<f64, String>,
}

/// The profile in use, why, and the trials behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chosen {
    pub profile: Profile,
    pub reason: Reason,
    pub trials: Vec<Trial>,
}

impl Chosen {
    /// One line: `gpu-2 (timed: cpu 26.3, gpu-2 1.07, gpu-4 1.15, gpu-8 1.66 ms/token)`.
    pub fn describe(&self) -> String {
        let why = match self.reason {
            Reason::Asked => "asked for".to_string(),
            Reason::Software => "the adapter is a CPU".to_string(),
            Reason::Remembered => "timed before on this adapter".to_string(),
            Reason::Timed => {
                let each: Vec<String> = self
                    .trials
                    .iter()
                    .map(|t| match &t.ms_per_token {
                        Ok(ms) => format!("{} {ms:.3}", t.profile.name()),
                        Err(_) => format!("{} failed", t.profile.name()),
                    })
                    .collect();
                format!("timed: {} ms/token", each.join(", "))
            }
        };
        format!("{} ({why})", self.profile.name())
    }
}

/// Whether the adapter is a CPU in disguise: the driver says so, or its name
/// is one of the software renderers this project meets.
pub fn is_software(info: &wgpu::AdapterInfo) -> bool {
    let names = [&info.name, &info.driver, &info.driver_info].map(|s| s.to_lowercase());
    let software = ["llvmpipe", "lavapipe", "swiftshader", "softpipe", "warp"];
    info.device_type == wgpu::DeviceType::Cpu
        || names.iter().any(|n| software.iter().any(|s| n.contains(s)))
}

/// Decode steps timed per candidate (after two untimed ones).
const TIMED_STEPS: usize = 6;

/// Uploads `model` to `ctx` and opens it with the kernels `choice` asks for
/// (`remembered`: a profile timed before on this adapter, taken for `Auto`
/// and, if it is a gpu profile, for `Gpu`).
pub async fn open(
    ctx: GpuContext,
    model: SharedModel,
    choice: KernelsChoice,
    remembered: Option<Profile>,
) -> Result<(Rc<GpuModel>, Chosen)> {
    let software = is_software(&ctx.adapter_info);
    let gpu_profiles = Split::CANDIDATES.map(Profile::Gpu);
    let remembered_gpu = remembered.filter(|p| *p != Profile::Cpu);
    let (candidates, reason): (Vec<Profile>, Reason) = match (choice, remembered) {
        (KernelsChoice::Exactly(p), _) => (vec![p], Reason::Asked),
        (KernelsChoice::Auto, _) if software => (vec![Profile::Cpu], Reason::Software),
        (KernelsChoice::Auto, Some(p)) => (vec![p], Reason::Remembered),
        (KernelsChoice::Gpu, _) if remembered_gpu.is_some() => {
            (remembered_gpu.into_iter().collect(), Reason::Remembered)
        }
        (KernelsChoice::Auto, None) => {
            (std::iter::once(Profile::Cpu).chain(gpu_profiles).collect(), Reason::Timed)
        }
        (KernelsChoice::Gpu, _) => (gpu_profiles.to_vec(), Reason::Timed),
    };
    let first = GpuModel::new(ctx, model, candidates[0]).await?;
    if candidates.len() == 1 {
        let profile = candidates[0];
        return Ok((first, Chosen { profile, reason, trials: Vec::new() }));
    }
    let mut gpus = vec![Ok(first.clone())];
    for &profile in &candidates[1..] {
        gpus.push(first.with_profile(profile).await);
    }
    let times = time_decodes(&gpus).await;
    let mut trials = Vec::new();
    let mut best: Option<(f64, Rc<GpuModel>)> = None;
    for ((profile, gpu), timed) in candidates.iter().zip(gpus).zip(times) {
        let timed = gpu.and_then(|gpu| timed.map(|ms| (ms, gpu)));
        trials.push(Trial {
            profile: *profile,
            ms_per_token: timed.as_ref().map(|t| t.0).map_err(|e| e.to_string()),
        });
        if let Ok((ms, gpu)) = timed {
            if best.as_ref().is_none_or(|(b, _)| ms < *b) {
                best = Some((ms, gpu));
            }
        }
    }
    let (_, gpu) = best.ok_or_else(|| {
        EngineError::Gpu(format!("no kernel profile ran on this GPU: {trials:?}"))
    })?;
    let profile = gpu.profile();
    Ok((gpu, Chosen { profile, reason: Reason::Timed, trials }))
}

/// Each candidate's median decode step after a short prompt: GPU time where
/// the device has timestamps (what the kernels themselves cost), else wall
/// time. The candidates take turns, one step each a round after two untimed
/// rounds, so a GPU's clocks ramping up from idle or a passing stall fall on
/// every candidate alike (timed one after another, the first candidate once
/// measured 4× slow on an H200 and lost).
async fn time_decodes(gpus: &[Result<Rc<GpuModel>>]) -> Vec<Result<f64>> {
    let mut sessions: Vec<Result<GpuSession>> = Vec::new();
    let mut room = usize::MAX;
    for gpu in gpus {
        let opened = match gpu {
            Ok(gpu) => prefilled(gpu).await,
            Err(e) => Err(EngineError::Gpu(e.to_string())),
        };
        if let Ok(s) = &opened {
            room = room.min(s.config().n_positions - s.pos());
        }
        sessions.push(opened);
    }
    let mut times = vec![Vec::new(); gpus.len()];
    for step in 0..(TIMED_STEPS + 2).min(room) {
        for (slot, times) in sessions.iter_mut().zip(&mut times) {
            let Ok(session) = slot else { continue };
            let token = (step % session.config().vocab_size) as u32;
            match session.decode(token).await {
                Ok(_) if step >= 2 => {
                    let stats = session.last_stats();
                    times.push(stats.gpu_ms.unwrap_or(stats.wall_ms));
                }
                Ok(_) => {}
                Err(e) => *slot = Err(e),
            }
        }
    }
    let median = |(slot, times): (Result<GpuSession>, Vec<f64>)| {
        slot?;
        crate::cost::median(&times).ok_or_else(|| {
            EngineError::Gpu("the model's context is too short to time a profile".into())
        })
    };
    sessions.into_iter().zip(times).map(median).collect()
}

/// A session of `gpu` that has read a short prompt.
async fn prefilled(gpu: &Rc<GpuModel>) -> Result<GpuSession> {
    let c = gpu.config();
    let prompt: Vec<u32> =
        (0..8.min(c.n_positions - 1)).map(|i| (i * 7 % c.vocab_size) as u32).collect();
    let mut session = GpuSession::new(gpu.clone())?;
    session.prefill(&prompt, Wanted::Last).await?;
    Ok(session)
}

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
    let (_, gpu) = best.ok_or_else(|| EngineError::Gpu(no_profile_ran(&trials)))?;
    let profile = gpu.profile();
    Ok((gpu, Chosen { profile, reason: Reason::Timed, trials }))
}

/// Why no candidate could be kept, as one sentence: each profile and its error.
fn no_profile_ran(trials: &[Trial]) -> String {
    let each: Vec<String> = trials
        .iter()
        .map(|t| match &t.ms_per_token {
            Ok(ms) => format!("{} {ms:.3} ms/token", t.profile.name()),
            Err(e) => format!("{} failed ({e})", t.profile.name()),
        })
        .collect();
    format!("no kernel profile ran on this GPU: {}", each.join("; "))
}

/// Each candidate's median decode step after a short prompt: GPU time where
/// the device has timestamps (what the kernels themselves cost), else wall
/// time. The candidates take turns, one step each a round after two untimed
/// rounds, so a GPU's clocks ramping up from idle or a passing stall fall on
/// every candidate alike (timed one after another, the first candidate once
/// measured 4× slow on an H200 and lost). A session whose context is full
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
    for step in 0..TIMED_STEPS + 2 {
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
                Ok(_) if step >= 2 => {
                    let stats = session.last_stats();
                    times.push(stats.gpu_ms.unwrap_or(stats.wall_ms));
                }
                Ok(_) => {}
                Err(e) => *slot = Err(e),
            }
        }
    }
    let median = |(slot, times): (Result<(GpuSession, usize)>, Vec<f64>)| {
        slot?;
        crate::cost::median(&times)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Split;

    #[test]
    fn a_failure_is_a_sentence_naming_each_profile() {
        let trials = [
            Trial { profile: Profile::Gpu(Split { wide: 2 }), ms_per_token: Err("lost".into()) },
            Trial { profile: Profile::Cpu, ms_per_token: Ok(1.5) },
        ];
        assert_eq!(
            no_profile_ran(&trials),
            "no kernel profile ran on this GPU: gpu-2 failed (lost); cpu 1.500 ms/token"
        );
    }
}

//! Choosing the kernel profile for an adapter, as rules that need no GPU:
//! which candidates a choice tries, which trial wins, and what the page
//! remembers. The GPU engine runs the trials (`gpu::profile`: the model
//! uploaded once, each candidate's pipelines compiled, a few decode steps of
//! each timed); the tests here run them from a table.
//!
//! - A software adapter (a CPU in disguise) gets the cpu profile untimed.
//! - Otherwise `auto` times the cpu profile and every gpu candidate and keeps
//!   the fastest, so it never picks one slower than the cpu profile; `gpu`
//!   times the gpu candidates only; a profile asked for by name is taken.
//! - A candidate that fails to compile or errors loses; if all fail, the
//!   failure is one sentence naming each.
//! - A timed choice is remembered per adapter, model shape, weight format
//!   and build of the kernels ([`key`]): the next load takes it untimed, and
//!   a new build of the kernels (another [`build_id`]) times again. A
//!   remembered profile that no longer opens is forgotten and the
//!   candidates are timed again.

use super::{Kernel, KernelsChoice, Profile, Split};
use crate::model::Config;
use crate::storage::format::Format;

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
    pub ms_per_token: Result<f64, String>,
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

/// What runs the candidates: opens the model with each one's kernels and,
/// when `time` is set, times a few decode steps of each (milliseconds per
/// token; untimed, a candidate that opened gives 0). Each result is the
/// candidate's, or why it could not run.
#[allow(async_fn_in_trait)] // run on one thread: the page's, or the CLI's
pub trait Trials {
    async fn run(&mut self, candidates: &[Profile], time: bool) -> Vec<Result<f64, String>>;
}

/// Where choices are remembered (the page: the browser's localStorage).
pub trait Memory {
    fn get(&self, key: &str) -> Option<String>;
    fn set(&self, key: &str, value: &str);
}

/// The candidates `choice` tries on an adapter (`software`: a CPU in
/// disguise) for weights in `format`, given the profile `remembered` for
/// it, and why.
pub fn candidates(
    choice: KernelsChoice,
    software: bool,
    format: Format,
    remembered: Option<Profile>,
) -> (Vec<Profile>, Reason) {
    let gpu_profiles = Split::candidates(format).map(Profile::Gpu).to_vec();
    let remembered_gpu = remembered.filter(|p| *p != Profile::Cpu);
    match (choice, remembered) {
        (KernelsChoice::Exactly(p), _) => (vec![p], Reason::Asked),
        (KernelsChoice::Auto, _) if software => (vec![Profile::Cpu], Reason::Software),
        (KernelsChoice::Auto, Some(p)) => (vec![p], Reason::Remembered),
        (KernelsChoice::Gpu, _) if remembered_gpu.is_some() => {
            (remembered_gpu.into_iter().collect(), Reason::Remembered)
        }
        (KernelsChoice::Auto, None) => {
            (std::iter::once(Profile::Cpu).chain(gpu_profiles).collect(), Reason::Timed)
        }
        (KernelsChoice::Gpu, _) => (gpu_profiles, Reason::Timed),
    }
}

/// The fastest trial that ran (the earlier one on a tie), or why none did.
pub fn fastest(trials: &[Trial]) -> Result<Profile, String> {
    let mut best: Option<(f64, Profile)> = None;
    for t in trials {
        if let Ok(ms) = t.ms_per_token {
            if best.is_none_or(|(b, _)| ms < b) {
                best = Some((ms, t.profile));
            }
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| no_profile_ran(trials))
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

/// Chooses the profile `choice` asks for on an adapter (`software`: a CPU
/// in disguise) for weights in `format`, trying candidates with `trials` and, where the page
/// remembers choices, reading and keeping them in `memory` under `key`.
pub async fn choose(
    choice: KernelsChoice,
    software: bool,
    format: Format,
    memory: Option<(&dyn Memory, &str)>,
    trials: &mut impl Trials,
) -> Result<Chosen, String> {
    let remembered = memory.and_then(|(m, key)| Profile::from_name(&m.get(key)?));
    let (mut profiles, mut reason) = candidates(choice, software, format, remembered);
    let mut results = trials.run(&profiles, profiles.len() > 1).await;
    if reason == Reason::Remembered && results.iter().all(Result::is_err) {
        // The remembered profile no longer opens (a driver update, other
        // limits): time the candidates again as if nothing were remembered.
        (profiles, reason) = candidates(choice, software, format, None);
        results = trials.run(&profiles, profiles.len() > 1).await;
    }
    let trials: Vec<Trial> = profiles
        .iter()
        .zip(results)
        .map(|(&profile, ms_per_token)| Trial { profile, ms_per_token })
        .collect();
    let profile = fastest(&trials)?;
    if reason == Reason::Timed {
        if let Some((m, key)) = memory {
            m.set(key, &profile.name());
        }
    }
    // Untimed choices carry no trials: there is nothing measured to show.
    let trials = if reason == Reason::Timed { trials } else { Vec::new() };
    Ok(Chosen { profile, reason, trials })
}

/// Where a choice is remembered: per build of the kernels (`build`, from
/// [`build_id`]), adapter, model shape and weight format (a profile that
/// wins on one shape need not on another).
pub fn key(build: &str, adapter: &str, config: &Config, format: Format) -> String {
    let c = config;
    format!(
        "decode-lab.kernels/{build}/{adapter}/{}x{}x{}/{}",
        c.n_layer,
        c.n_embd,
        c.vocab_size,
        format.name()
    )
}

/// A hash of every kernel's WGSL as compiled in every weight format and of
/// the gpu layouts timed: another build of the kernels is another id, and
/// what an older build timed is not taken for it.
pub fn build_id() -> String {
    let mut sources: Vec<String> = Vec::new();
    for &kernel in Kernel::ALL {
        for format in Format::ALL {
            sources.push(kernel.source_for(format));
        }
    }
    for format in Format::ALL {
        sources.extend(Split::candidates(format).map(|s| Profile::Gpu(s).name()));
    }
    id_of(sources.iter().map(String::as_str))
}

/// FNV-1a (64 bits) over `parts`, each followed by a separator, in hex.
fn id_of<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests;

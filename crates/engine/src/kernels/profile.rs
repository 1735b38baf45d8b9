//! Kernel profiles: which shape of each step a GPU runs. The same forward
//! pass has two sets of kernels. Adapters that are CPUs (lavapipe,
//! SwiftShader: invocations are SIMD lanes, barriers are slow, caches are
//! large) run the **cpu** profile: one invocation per output with a serial
//! loop over k. Real GPUs run the **gpu** profile: k split over the
//! workgroup, flash-decoding attention, a tiled prefill matmul, a split LM
//! head — dozens of independent loads in flight where the cpu profile has
//! one. The profile is chosen per adapter by timing (`gpu::profile`).

use super::cost::{rounds, DOT_ROWS};
use super::{attention_split, lm_head_split, Kernel, WG, WG_SPLIT};
use crate::storage::format::Format;

/// Which shapes a GPU runs its kernels in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// One invocation per output, serial loops over k, 64 invocations a
    /// workgroup: right where the adapter is a CPU.
    Cpu,
    /// The split shapes for real GPUs, laid out as the [`Split`] says.
    Gpu(Split),
}

/// How a split kernel lays its [`WG_SPLIT`] invocations over a weight matrix:
/// `wide` column groups side by side (neighbouring words of a row) times
/// `WG_SPLIT / wide` slices of k. Narrower: more workgroups and shorter chains
/// of loads; wider: longer runs of a row per workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Split {
    pub wide: u32,
}

impl Split {
    /// The layouts a real GPU is timed with at load (with the cpu profile),
    /// for weights in `format`. A workgroup covers `wide` words of a row, so
    /// formats with more weights to a word (int8: 4, int4: 8) have fewer
    /// workgroups at the same `wide`, and prefer narrower layouts. On an
    /// H200 (decode, GPU ms/token): 124M f16 gpu-1 1.20, gpu-2 1.07, gpu-4
    /// 1.15, gpu-8 1.66 (f32 prefers gpu-8); 124M int4 gpu-1 1.37, gpu-2 1.71,
    /// and 355M 3.15 against 3.80 (int8: 1.16 against 1.18, 2.72 against
    /// 2.84), gpu-8 slowest in every 8- and 4-bit format. A GPU with fewer
    /// multiprocessors fills them with fewer, wider workgroups.
    pub fn candidates(format: Format) -> [Split; 3] {
        match format.per_word() {
            1 | 2 => [Split { wide: 2 }, Split { wide: 4 }, Split { wide: 8 }],
            _ => [Split { wide: 1 }, Split { wide: 2 }, Split { wide: 4 }],
        }
    }

    /// Every layout that can be asked for by name (`gpu-1` … `gpu-16`);
    /// the twin tests run them all.
    pub const ALL: [Split; 5] = [
        Split { wide: 1 },
        Split { wide: 2 },
        Split { wide: 4 },
        Split { wide: 8 },
        Split { wide: 16 },
    ];

    /// The one used where nothing was timed (`--kernels gpu` picks by timing too).
    pub const DEFAULT: Split = Split { wide: 4 };

    /// Slices of k per workgroup.
    pub fn slices(self) -> u32 {
        WG_SPLIT / self.wide
    }

    /// Workgroups over `n` columns of weights in `format` (each invocation
    /// owns one word of a row: `per_word` columns).
    pub fn groups(self, n: u32, format: Format) -> [u32; 3] {
        [n.div_ceil(self.wide * format.per_word() as u32), 1, 1]
    }

    /// Rounds of loads of one invocation's slice of `k` rows, `per_round` a round.
    pub fn slice_rounds(self, k: u32, per_round: u64) -> u64 {
        rounds(u64::from(k.div_ceil(self.slices())), per_round)
    }

    /// Rounds of a single-row split kernel's dot products: [`DOT_ROWS`] a round.
    pub fn dot_rounds(self, k: u32) -> u64 {
        self.slice_rounds(k, DOT_ROWS)
    }
}

impl Profile {
    /// `cpu`, or `gpu` with its layout (`gpu-8`): in the bench, the badge and the stats line.
    pub fn name(self) -> String {
        match self {
            Profile::Cpu => "cpu".into(),
            Profile::Gpu(s) => format!("gpu-{}", s.wide),
        }
    }

    /// The profile a name gives (`cpu`, `gpu-1` … `gpu-16`).
    pub fn from_name(name: &str) -> Option<Profile> {
        let all = std::iter::once(Profile::Cpu).chain(Split::ALL.map(Profile::Gpu));
        all.into_iter().find(|p| p.name() == name)
    }

    /// Every kernel this profile's plans dispatch, and the device probe's
    /// and the greedy step's argmax: what its pipelines compile (the kernel
    /// table's column for the profile).
    pub fn kernels(self) -> Vec<Kernel> {
        Kernel::ALL.iter().copied().filter(|k| k.wg_in(self).is_some()).collect()
    }

    /// Invocations per workgroup of `kernel` (its `override WG`, where it has one).
    pub fn wg(self, kernel: Kernel) -> u32 {
        kernel.wg_in(self).unwrap_or(WG)
    }

    /// The value of pipeline constant `name` of `kernel`: every `override`
    /// a kernel declares is set from here.
    pub fn constant(self, kernel: Kernel, name: &str) -> Option<f64> {
        Some(match name {
            "WG" => f64::from(self.wg(kernel)),
            "CHUNK" => f64::from(attention_split::CHUNK),
            "ROWS" => f64::from(lm_head_split::ROWS),
            // The self-test's fault hook (shaders/fault.wgsl): off; only
            // `Pipelines::faulted` turns it on.
            "FAULT" => 0.0,
            _ => return None,
        })
    }
}

/// What `--kernels` / `kernels=` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelsChoice {
    /// The cpu profile on a software adapter; elsewhere every profile timed.
    Auto,
    /// The gpu profile, its layout chosen by timing.
    Gpu,
    /// This profile, untimed.
    Exactly(Profile),
}

impl KernelsChoice {
    /// Every name a choice is given by, in order.
    pub const NAMES: [&'static str; 8] =
        ["auto", "cpu", "gpu", "gpu-1", "gpu-2", "gpu-4", "gpu-8", "gpu-16"];

    /// The choice `name` gives (`auto`, `gpu`, or a profile's name).
    pub fn from_name(name: &str) -> Option<KernelsChoice> {
        match name {
            "auto" => Some(KernelsChoice::Auto),
            "gpu" => Some(KernelsChoice::Gpu),
            _ => Profile::from_name(name).map(KernelsChoice::Exactly),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_auto_gpu_and_every_profile() {
        let profiles = std::iter::once(Profile::Cpu).chain(Split::ALL.map(Profile::Gpu));
        let mut want = vec!["auto".to_string(), "gpu".to_string()];
        want.extend(profiles.map(Profile::name));
        let mut names: Vec<String> = KernelsChoice::NAMES.map(String::from).to_vec();
        names.sort();
        want.sort();
        assert_eq!(names, want);
        for name in KernelsChoice::NAMES {
            assert!(KernelsChoice::from_name(name).is_some(), "{name}");
        }
        assert_eq!(KernelsChoice::from_name("gpu-7"), None);
        assert_eq!(Profile::from_name("gpu-8"), Some(Profile::Gpu(Split { wide: 8 })));
    }

    #[test]
    fn the_cost_model_unrolls_as_the_shaders_do() {
        use crate::kernels::snippets::constant;
        let split_k = include_str!("../../../../shaders/split_k.wgsl");
        let split_dot = include_str!("../../../../shaders/split_dot.wgsl");
        assert_eq!(constant(split_k, "UNROLL"), Some(crate::kernels::cost::UNROLL));
        assert_eq!(constant(split_dot, "DOT_ROWS"), Some(DOT_ROWS));
        let lm_head = include_str!("../../../../shaders/lm_head_split.wgsl");
        assert_eq!(constant(lm_head, "WORDS"), Some(crate::kernels::lm_head_split::WORDS));
        let ln_stats = include_str!("../../../../shaders/ln_stats.wgsl");
        assert_eq!(constant(ln_stats, "ROW_LOADS"), Some(crate::kernels::layernorm::ROW_LOADS));
        let attention = include_str!("../../../../shaders/attention_split.wgsl");
        assert_eq!(constant(attention, "KEY_LANES"), Some(u64::from(attention_split::KEY_LANES)));
        assert_eq!(constant(attention, "DIM_LANES"), Some(u64::from(attention_split::DIM_LANES)));
    }
}

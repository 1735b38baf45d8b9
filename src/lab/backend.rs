//! Which engine the page runs on and why (the banner's and the badge's
//! words), where the CPU engine runs, and how the weights are held.

use engine::gpu::profile::Chosen;
use engine::storage::format::Format;

/// Which engine the page runs on, and why.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    /// WebGPU adapter found: our WGSL kernels run on it, in the `kernels` profile.
    WebGpu { adapter: String, held: WeightsHeld, kernels: Chosen },
    /// The CPU engine runs in wasm, for `reason`.
    Cpu { reason: CpuReason, held: WeightsHeld, thread: CpuThread },
}

/// Why the page runs the CPU engine: the banner says which, since "WebGPU is
/// not available" would be false where the link chose the CPU.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuReason {
    /// The link asked for it (`backend=cpu`).
    Asked,
    /// No usable WebGPU (absent, refused the model, lost, failed its self-test): how.
    NoWebGpu(String),
}

impl CpuReason {
    /// One sentence of why, for the self-test panel and the banner's detail.
    pub fn text(&self) -> String {
        match self {
            CpuReason::Asked => "the CPU engine was asked for (backend=cpu)".into(),
            CpuReason::NoWebGpu(why) => why.clone(),
        }
    }
}

/// Where the CPU engine runs.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuThread {
    /// In the CPU worker: the page's thread stays free during a forward pass.
    /// `workers`: 2 when a coworker computes half of every big product, else
    /// 1 and why (`alone`).
    Worker { workers: usize, alone: Option<String> },
    /// On the page's thread (in chunks between which the page gets a turn), and why.
    Page(String),
}

/// How the model's weight matrices are stored (on either engine), and the
/// bytes every weight takes: the `data-weights` hook and the badge's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeightsHeld {
    pub format: Format,
    pub bytes: u64,
    /// Whether the CPU engine multiplies them by 8-bit activations
    /// (`activations=int8`).
    pub int8_activations: bool,
}

impl Backend {
    /// `worker` or `page` for the CPU engine: the `data-cpu-thread` test hook.
    pub fn cpu_thread(&self) -> Option<&'static str> {
        match self {
            Backend::Cpu { thread: CpuThread::Worker { .. }, .. } => Some("worker"),
            Backend::Cpu { .. } => Some("page"),
            Backend::WebGpu { .. } => None,
        }
    }

    /// How many CPU workers compute the steps: the `data-cpu-workers` test hook.
    pub fn cpu_workers(&self) -> Option<usize> {
        match self {
            Backend::Cpu { thread: CpuThread::Worker { workers, .. }, .. } => Some(*workers),
            _ => None,
        }
    }

    /// Why the CPU engine runs on the page's thread, if it does (the badge's tooltip).
    pub fn thread_note(&self) -> Option<String> {
        match self {
            Backend::Cpu { thread: CpuThread::Page(why), .. } => Some(format!(
                "The CPU engine runs on this page's thread, so long steps can make the page stutter: {why}"
            )),
            Backend::Cpu { thread: CpuThread::Worker { alone: Some(why), .. }, .. } => Some(format!(
                "The CPU engine runs in one worker; a second could compute half of each step, but {why}"
            )),
            Backend::Cpu { thread: CpuThread::Worker { workers, .. }, .. } => Some(format!(
                "The CPU engine runs in {workers} workers, each computing half of every big product of a step, \
                 where that is faster on this machine: the first decode steps are timed with and without \
                 the second, and the faster way is kept (the stats line shows the workers of each step)"
            )),
            _ => None,
        }
    }

    /// The kernel profile in use on WebGPU (`cpu`, `gpu-8`, …): the
    /// `data-kernels` hook and the stats line.
    pub fn kernels(&self) -> Option<String> {
        match self {
            Backend::WebGpu { kernels, .. } => Some(kernels.profile.name()),
            Backend::Cpu { .. } => None,
        }
    }

    /// Why those kernels (the badge's tooltip on WebGPU).
    pub fn kernels_note(&self) -> Option<String> {
        match self {
            Backend::WebGpu { kernels, .. } => {
                Some(format!("WGSL kernels: {}", kernels.describe()))
            }
            Backend::Cpu { .. } => None,
        }
    }

    /// `webgpu` or `cpu`: the `data-backend` test hook.
    pub fn kind(&self) -> &'static str {
        match self {
            Backend::WebGpu { .. } => "webgpu",
            Backend::Cpu { .. } => "cpu",
        }
    }

    /// The weights' format and size (the same on either engine).
    pub fn held(&self) -> WeightsHeld {
        match self {
            Backend::WebGpu { held, .. } | Backend::Cpu { held, .. } => *held,
        }
    }

    /// `f32`, `f16`, `int8` or `int4`: the `data-weights` hook.
    pub fn weights(&self) -> &'static str {
        self.held().format.name()
    }

    /// In words, with the adapter's name and the weights' format and size.
    pub fn label(&self) -> String {
        let WeightsHeld { format, bytes, int8_activations } = self.held();
        let acts8 = if int8_activations { " × 8-bit activations" } else { "" };
        let held = format!("{} weights{acts8}, {:.1} MB", format.name(), bytes as f64 / 1e6);
        match self {
            Backend::WebGpu { adapter, kernels, .. } => {
                format!("WebGPU · {adapter} · {} kernels · {held}", kernels.profile.name())
            }
            Backend::Cpu { thread: CpuThread::Worker { workers: 1, .. }, .. } => {
                format!("CPU (wasm, worker) · {held}")
            }
            Backend::Cpu { thread: CpuThread::Worker { workers, .. }, .. } => {
                format!("CPU (wasm, {workers} workers) · {held}")
            }
            Backend::Cpu { .. } => format!("CPU (wasm) · {held}"),
        }
    }
}

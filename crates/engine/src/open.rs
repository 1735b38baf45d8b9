//! One way to open an engine on a model, for every caller — the CLI, the
//! page and the CPU worker: the model and the choices (which engine, how the
//! weights are stored, which kernels) go in; the engine, which opens
//! sessions, and what was chosen come out. A choice that makes no sense for
//! an engine cannot be written: kernels belong to the GPU's variant, the
//! CPU's fast layout to the CPU's.

use std::rc::Rc;

use crate::cpu::{CpuSession, Pause};
use crate::error::{EngineError, Result};
#[cfg(feature = "gpu")]
use crate::gpu::profile::{self, Chosen, Memory};
#[cfg(feature = "gpu")]
use crate::gpu::{GpuContext, GpuModel, GpuSession};
#[cfg(feature = "gpu")]
use crate::kernels::KernelsChoice;
use crate::model::WeightsChoice;
use crate::remote::{Link, RemoteModel};
use crate::session::Session;
use crate::step::SharedModel;
use crate::storage::format::Format;

/// Where the CPU engine keeps its matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuLayout {
    /// As loaded: the caller shares the model (the page's thread, which also
    /// runs the logit lens on it and may hand it to a GPU later).
    AsLoaded,
    /// Lifted and in column panels (`Weights::use_cpu_layout`): the same
    /// values, read faster, and read by no GPU (the CLI, the worker).
    Fast,
    /// [`Fast`](Self::Fast), and int8 weights multiply 8-bit activations
    /// (`Weights::use_int8_activations`, `--activations int8`): faster,
    /// slightly other numbers; int8, int8-tensor and int4 weights only.
    Int8Activations,
}

/// Which engine runs the model, with the choices that engine has.
pub enum EngineChoice {
    /// The CPU engine on this thread; `pause` gives the caller's event loop
    /// a turn inside long prefills (the page's thread).
    Cpu { layout: CpuLayout, pause: Option<Pause> },
    /// The GPU engine on `ctx`, with the kernels `kernels` asks for
    /// (`memory`: where timed choices are kept and read back, the page's).
    #[cfg(feature = "gpu")]
    Gpu { ctx: Box<GpuContext>, kernels: KernelsChoice, memory: Option<Rc<dyn Memory>> },
    /// The CPU engine in another thread reached through `link` (the page's
    /// worker), which holds its own copy of the model.
    Remote { link: Rc<dyn Link> },
}

/// Everything `open` takes besides the model.
pub struct Choice {
    pub engine: EngineChoice,
    pub weights: WeightsChoice,
}

/// A model made ready on one engine: opens sessions on it.
#[derive(Clone)]
pub enum Engine {
    Cpu {
        model: SharedModel,
        pause: Option<Pause>,
    },
    #[cfg(feature = "gpu")]
    Gpu(Rc<GpuModel>),
    Remote(Rc<RemoteModel>),
}

/// What `open` chose: the weights' format, and on the GPU its kernels and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Chose {
    pub format: Format,
    /// Whether the CPU engine multiplies the weights by 8-bit activations
    /// ([`CpuLayout::Int8Activations`]).
    pub int8_activations: bool,
    #[cfg(feature = "gpu")]
    pub kernels: Option<Chosen>,
}

/// Opens `model` as `choice` says: its matrices converted to the format the
/// weights choice names (the model itself when already so), laid out or
/// uploaded for the engine, its kernels chosen on a GPU.
pub async fn open(model: SharedModel, choice: Choice) -> Result<(Engine, Chose)> {
    let format = choice.weights.format(&model);
    let model = match model.format() == format {
        true => model,
        false => SharedModel::new(std::sync::Arc::unwrap_or_clone(model).into_format(format)?),
    };
    #[cfg(feature = "gpu")]
    let mut chosen_kernels = None;
    let int8_activations =
        matches!(choice.engine, EngineChoice::Cpu { layout: CpuLayout::Int8Activations, .. });
    let engine = match choice.engine {
        EngineChoice::Cpu { layout: CpuLayout::AsLoaded, pause } => Engine::Cpu { model, pause },
        EngineChoice::Cpu { layout: CpuLayout::Fast, pause } => {
            let mut model = std::sync::Arc::unwrap_or_clone(model);
            model.weights.use_cpu_layout();
            Engine::Cpu { model: SharedModel::new(model), pause }
        }
        EngineChoice::Cpu { layout: CpuLayout::Int8Activations, pause } => {
            let mut model = std::sync::Arc::unwrap_or_clone(model);
            if !model.weights.use_int8_activations() {
                return Err(EngineError::Setting(format!(
                    "8-bit activations multiply int8 or int4 weights: these are {} (add --weights int8, int8-tensor or int4)",
                    format.name()
                )));
            }
            model.weights.use_cpu_layout();
            Engine::Cpu { model: SharedModel::new(model), pause }
        }
        #[cfg(feature = "gpu")]
        EngineChoice::Gpu { ctx, kernels, memory } => {
            let (gpu, chosen) = profile::open(*ctx, model, kernels, memory.as_deref()).await?;
            chosen_kernels = Some(chosen);
            Engine::Gpu(gpu)
        }
        EngineChoice::Remote { link } => Engine::Remote(RemoteModel::new(link, &model)),
    };
    let chose = Chose {
        format,
        int8_activations,
        #[cfg(feature = "gpu")]
        kernels: chosen_kernels,
    };
    Ok((engine, chose))
}

impl Engine {
    /// A fresh session (empty KV cache).
    pub fn session(&self) -> Result<Session> {
        Ok(match self {
            Engine::Cpu { model, pause } => Session::Cpu(cpu_session(model, pause)),
            #[cfg(feature = "gpu")]
            Engine::Gpu(gpu) => Session::Gpu(GpuSession::new(gpu.clone())?),
            Engine::Remote(worker) => Session::Remote(worker.session()),
        })
    }

    /// Whether this engine runs weights laid out for 8-bit activations
    /// (`Weights::use_int8_activations`): the CPU engine's, here or in the
    /// worker; the GPU engine refuses them.
    pub fn takes_int8_activations(&self) -> bool {
        match self {
            Engine::Cpu { .. } | Engine::Remote(_) => true,
            #[cfg(feature = "gpu")]
            Engine::Gpu(_) => false,
        }
    }

    /// A fresh CPU session, where this is the CPU engine on this thread.
    pub fn cpu_session(&self) -> Option<CpuSession> {
        let Engine::Cpu { model, pause } = self else { return None };
        Some(cpu_session(model, pause))
    }

    /// The same engine over `model` (another format of the loaded model,
    /// say): on the GPU uploaded with the same kernels; in the worker made
    /// from the worker's own copy.
    pub async fn reopen(&self, model: SharedModel) -> Result<Engine> {
        Ok(match self {
            Engine::Cpu { pause, .. } => Engine::Cpu { model, pause: pause.clone() },
            #[cfg(feature = "gpu")]
            Engine::Gpu(gpu) => {
                Engine::Gpu(GpuModel::new(gpu.ctx.clone(), model, gpu.profile()).await?)
            }
            Engine::Remote(worker) => Engine::Remote(worker.variant(&model)),
        })
    }

    /// The model as this engine holds it (the CPU engine's and the GPU's;
    /// the worker holds its own).
    pub fn model(&self) -> Option<SharedModel> {
        match self {
            Engine::Cpu { model, .. } => Some(model.clone()),
            #[cfg(feature = "gpu")]
            Engine::Gpu(gpu) => Some(gpu.model.clone()),
            Engine::Remote(_) => None,
        }
    }
}

/// A CPU session on `model`, pausing as `pause` says.
fn cpu_session(model: &SharedModel, pause: &Option<Pause>) -> CpuSession {
    let session = CpuSession::new(model.clone());
    match pause {
        Some(pause) => session.with_pause(pause.clone()),
        None => session,
    }
}

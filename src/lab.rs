//! The loaded model and the engine it runs on: the bridge between the page and
//! `decode-lab-engine`. Loading order: probe WebGPU → fetch the model folder's
//! files (`load/model_files.rs`, with progress) → parse and check → upload to the
//! GPU, or fall back to the CPU engine with the reason kept for the banner.

use std::rc::Rc;
use std::sync::Arc;

use contract::{KernelsChoice, WeightsChoice};
use engine::cpu::Pause;
use engine::gpu::profile::{Chosen, Memory};
use engine::gpu::selftest::{self, Report};
use engine::gpu::GpuContext;
use engine::kernels::Kernel;
use engine::model::{Model, Tokenizer};
use engine::open::{open, Choice, Engine, EngineChoice};
use engine::storage::format::Format;
use engine::Session;

use crate::browser::yield_to_browser;
use crate::load::model_files::{fetch_files, parse, ALL_FILES};
pub use crate::load::model_files::{LoadError, Progress};
use crate::load::source::ModelSource;
use crate::load::times::{since_page_start, Laps, LoadTimes};
use crate::remembered;
use crate::worker::CpuWorker;

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
        let WeightsHeld { format, bytes } = self.held();
        let held = format!("{} weights, {:.1} MB", format.name(), bytes as f64 / 1e6);
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

/// A model ready to open sessions on.
pub struct Lab {
    /// The model with its matrices in the chosen format (both engines run it).
    pub model: Arc<Model>,
    pub tokenizer: Rc<Tokenizer>,
    pub backend: Backend,
    /// Whether the matrices hold the checkpoint's values exactly (f32, or
    /// f16 for an f16 checkpoint): [`Lab::variant`] starts from them.
    lossless: bool,
    /// Where the model's files came from: other files of the model (the
    /// held-out passage) are read from there.
    pub source: ModelSource,
    /// The engine the model was opened on (`engine::open`): the GPU, the
    /// CPU worker, or the CPU engine on the page's thread.
    engine: Engine,
    /// How long the load took, by part (the device report's).
    pub times: LoadTimes,
}

/// The engine on the page's thread: a CPU session there lets the page in
/// during a long prefill.
fn page_engine(model: Arc<Model>) -> Engine {
    let pause: Pause = Rc::new(|| Box::pin(yield_to_browser()));
    Engine::Cpu { model, pause: Some(pause) }
}

/// A fresh session on `model` on the same engine as `engine` (uploaded to the
/// GPU with the same kernels; the worker makes the same variant from its own
/// copy of the model): the quantization lesson's other formats.
pub async fn open_like(engine: &Engine, model: Arc<Model>) -> Result<Session, String> {
    let reopened = engine.reopen(model).await.map_err(|e| e.to_string())?;
    reopened.session().map_err(|e| e.to_string())
}

impl Lab {
    /// A fresh session (empty KV cache) on the chosen engine.
    pub fn session(&self) -> Result<Session, String> {
        self.engine.session().map_err(|e| e.to_string())
    }

    /// The loaded model with its matrices in `format` (the model itself when
    /// already so), for the quantization lesson: refused when the page holds
    /// quantised weights, which are not the checkpoint's values to start from.
    pub fn variant(&self, format: Format) -> Result<Arc<Model>, String> {
        let held = self.model.format();
        if !self.lossless {
            return Err(format!(
                "this lesson compares every format with the checkpoint's own values, but the page holds them as {} (weights={}): open it with weights=auto",
                held.name(),
                held.name()
            ));
        }
        match held == format {
            true => Ok(self.model.clone()),
            false => self.model.to_format(format).map(Arc::new).map_err(|e| e.to_string()),
        }
    }

    /// The engine, to open sessions on other models with ([`open_like`]).
    pub fn engine(&self) -> Engine {
        self.engine.clone()
    }

    /// Display text of one token (as the tokenizer decodes it alone).
    pub fn token_text(&self, id: u32) -> String {
        self.tokenizer.decode(&[id]).unwrap_or_else(|_| format!("<{id}>"))
    }
}

impl Lab {
    /// Destroys the GPU device, as a driver reset would (the `test_hooks=1`
    /// hook `decodeLabTest.loseGpuDevice()`): the device-lost path then runs.
    pub fn lose_gpu_device(&self) {
        if let Engine::Gpu(gpu) = &self.engine {
            gpu.ctx.device.destroy();
        }
    }

    /// The on-device self-test (`selftest=1`) on the GPU engine, if there is
    /// one: every kernel against its CPU twin, then 16 greedy steps of the
    /// model on both engines. A failure moves the page to the CPU engine with
    /// the reason, in a CPU worker as after a CPU load. `fault` corrupts one
    /// kernel's result (test hook).
    pub async fn self_test(&mut self, fault: Option<Kernel>) -> Option<Report> {
        let Engine::Gpu(gpu) = &self.engine else { return None };
        let gpu = gpu.clone();
        let prompt = self.tokenizer.encode(SELF_TEST_PROMPT).ok().filter(|p| !p.is_empty())?;
        let report = selftest::run(gpu, &prompt, SELF_TEST_STEPS, fault).await;
        if let Some(reason) = report.failure() {
            self.fall_back_to_cpu(reason);
            let worker = self.start_worker().await;
            self.use_worker(worker);
        }
        Some(report)
    }

    /// Drops the GPU engine (after the device was lost): sessions opened from
    /// now on run on the CPU, on the page's thread until [`Lab::use_worker`].
    pub fn fall_back_to_cpu(&mut self, reason: String) {
        self.engine = page_engine(self.model.clone());
        let thread = CpuThread::Page("the CPU worker is starting (the GPU went away)".into());
        let reason = CpuReason::NoWebGpu(reason);
        self.backend = Backend::Cpu { reason, held: self.backend.held(), thread };
    }

    /// A CPU worker holding this lab's model, started from the model's files
    /// read again (from Cache Storage, where the load put them; the page
    /// dropped its copy): after the GPU was lost, so the CPU engine runs off
    /// the page's thread as it does after a CPU load.
    pub fn start_worker(
        &self,
    ) -> impl std::future::Future<Output = Result<(Engine, CpuThread), String>> + use<> {
        let (source, model) = (self.source.clone(), self.model.clone());
        async move {
            let file = async |name: &str| {
                let gone = || format!("{} is no longer there", source.place(name));
                source.get(name, |_, _| ()).await?.ok_or_else(gone)
            };
            let config = file("config.json").await?;
            let weights = file("model.safetensors").await?;
            let worker = CpuWorker::start(&config, &weights, &model).await?;
            let thread = worker_thread(&worker);
            Ok((open_worker(worker, model).await?, thread))
        }
    }

    /// Sessions opened from now on run in `worker` ([`Lab::start_worker`]),
    /// or, if it could not start, on the page's thread with the reason.
    pub fn use_worker(&mut self, worker: Result<(Engine, CpuThread), String>) {
        let Backend::Cpu { thread, .. } = &mut self.backend else { return };
        match worker {
            Ok((w, t)) => (*thread, self.engine) = (t, w),
            Err(why) => *thread = CpuThread::Page(format!("the CPU worker did not start: {why}")),
        }
    }
}

/// Refuses a tokenizer with ids the model has no rows for.
pub(crate) fn tokenizer_fits(model: &Model, tokenizer: &Tokenizer) -> Result<(), String> {
    match tokenizer.vocab_size() > model.config.vocab_size {
        true => Err(format!(
            "the tokenizer has {} tokens but the model only {}",
            tokenizer.vocab_size(),
            model.config.vocab_size
        )),
        false => Ok(()),
    }
}

/// `model` opened in a started CPU worker (which loaded its own copy).
pub(crate) async fn open_worker(worker: CpuWorker, model: Arc<Model>) -> Result<Engine, String> {
    let format = model.format();
    let choice = Choice {
        engine: EngineChoice::Remote { link: Rc::new(worker) },
        weights: WeightsChoice::Exactly(format),
    };
    Ok(open(model, choice).await.map_err(|e| e.to_string())?.0)
}

/// Where a started CPU worker runs the engine: alone, or with a coworker.
fn worker_thread(worker: &CpuWorker) -> CpuThread {
    let (workers, alone) = worker.workers();
    CpuThread::Worker { workers, alone }
}

/// What the page asks of a load.
#[derive(Clone, Copy)]
pub struct LoadChoice {
    /// Skip WebGPU (the `backend=cpu` URL parameter).
    pub force_cpu: bool,
    /// The `weights=` parameter.
    pub weights: WeightsChoice,
    /// The `kernels=` control.
    pub kernels: KernelsChoice,
    /// The user said yes to a download above [`CONFIRM_BYTES`].
    pub confirmed: bool,
}

/// Loads the model in `source`, reporting progress; `on_lost` is called if
/// the GPU device is lost later.
pub async fn load(
    source: ModelSource,
    choice: LoadChoice,
    progress: impl Fn(Progress),
    on_lost: impl Fn(String) + Send + 'static,
) -> Result<Lab, LoadError> {
    let LoadChoice { force_cpu, weights, kernels, confirmed } = choice;
    let mut laps = Laps::start();
    let mut times = LoadTimes::default();
    progress(Progress { what: "probing WebGPU".into(), loaded: 0, total: None });
    let ctx = if force_cpu {
        Err(CpuReason::Asked)
    } else {
        GpuContext::new().await.map_err(|e| CpuReason::NoWebGpu(e.to_string()))
    };
    times.probe_ms = laps.lap();
    let fetched = fetch_files(&source, confirmed, weights, ctx.is_ok(), &progress).await?;
    times.download_ms = laps.lap();
    let done = fetched.bytes;
    progress(Progress { what: "checking the model".into(), loaded: done, total: Some(done) });
    // f16 held (weights=auto or f16): an f16 checkpoint's matrices are read
    // as they are stored, not widened to f32 first (half the page's memory).
    let parsed = parse(&source, &fetched, weights.keeps_f16());
    if parsed.is_err() {
        // A corrupt file must not stay cached: the retry downloads it again.
        source.forget(&ALL_FILES).await;
    }
    let (model, tokenizer) = parsed?;
    tokenizer_fits(&model, &tokenizer)?;
    let format = weights.format(&model);
    let lossless = format == Format::F32 || model.exact_in(format);
    if model.format() != format {
        progress(Progress {
            what: format!("packing the weights as {}", format.name()),
            loaded: done,
            total: Some(done),
        });
        yield_to_browser().await;
    }
    let model = Arc::new(model.into_format(format).map_err(|e| e.to_string())?);
    let held = WeightsHeld { format, bytes: model.weights.bytes() };
    times.prepare_ms = laps.lap();
    // Converted above, so the opener keeps the model as it is (no copy).
    let weights = WeightsChoice::Exactly(format);
    let on_gpu = match ctx {
        Ok(ctx) => {
            let adapter = ctx.adapter_name();
            ctx.on_lost(on_lost);
            progress(Progress {
                what: "uploading weights to the GPU (and choosing its kernels)".into(),
                loaded: done,
                total: Some(done),
            });
            let memory = Some(Rc::new(remembered::LocalStorage) as Rc<dyn Memory>);
            let engine = EngineChoice::Gpu { ctx: Box::new(ctx), kernels, memory };
            match open(model.clone(), Choice { engine, weights }).await {
                Ok((engine, chose)) => {
                    let chosen = chose.kernels.expect("the GPU engine chooses its kernels");
                    Ok((engine, Backend::WebGpu { adapter, held, kernels: chosen }))
                }
                Err(e) => {
                    Err(CpuReason::NoWebGpu(format!("the GPU could not take this model: {e}")))
                }
            }
        }
        Err(reason) => Err(reason),
    };
    let (engine, backend) = match on_gpu {
        Ok(opened) => opened,
        Err(reason) => {
            progress(Progress {
                what: "starting the CPU worker".into(),
                loaded: done,
                total: Some(done),
            });
            let started = CpuWorker::start(&fetched.config, &fetched.weights, &model).await;
            let (thread, engine) = match started {
                Ok(w) => {
                    let thread = worker_thread(&w);
                    match open_worker(w, model.clone()).await {
                        Ok(engine) => (thread, engine),
                        Err(why) => (CpuThread::Page(why), page_engine(model.clone())),
                    }
                }
                Err(why) => (CpuThread::Page(why), page_engine(model.clone())),
            };
            (engine, Backend::Cpu { reason, held, thread })
        }
    };
    drop(fetched);
    times.engine_ms = laps.lap();
    times.ready_at_ms = since_page_start();
    let tokenizer = Rc::new(tokenizer);
    Ok(Lab { model, tokenizer, backend, lossless, source, engine, times })
}

/// What the self-test's model check runs: a prompt every GPT-2 tokenizer
/// encodes, then this many greedy steps.
const SELF_TEST_PROMPT: &str = "To be, or not to be";
const SELF_TEST_STEPS: usize = 16;

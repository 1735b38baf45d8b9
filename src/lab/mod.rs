//! The loaded model and the engine it runs on: the bridge between the page and
//! `decode-lab-engine`. Loading order: probe WebGPU → fetch the model folder's
//! files (`load/model_files.rs`, with progress) → parse and check → upload to the
//! GPU, or fall back to the CPU engine with the reason kept for the banner.

use std::rc::Rc;
use std::sync::Arc;

use contract::turns::Chat;
use contract::{KernelsChoice, WeightsChoice};
use engine::cpu::Pause;
use engine::gpu::profile::Memory;
use engine::gpu::selftest::{self, Report};
use engine::gpu::GpuContext;
use engine::kernels::Kernel;
use engine::model::{ChatPrompt, ChatTemplate, Model, Tokenizer};
use engine::open::{open, Choice, Engine, EngineChoice};
use engine::storage::format::Format;
use engine::Session;

use crate::browser::yield_to_browser;
use crate::load::model_files::{chat_template, fetch_files, parse, Fetched, ALL_FILES};
pub use crate::load::model_files::{LoadError, Progress};
use crate::load::source::ModelSource;
use crate::load::times::{since_page_start, Laps, LoadTimes};
use crate::remembered;
use crate::worker::CpuWorker;

mod backend;
pub use backend::{Backend, CpuReason, CpuThread, WeightsHeld};

/// A model ready to open sessions on.
pub struct Lab {
    /// The model with its matrices in the chosen format (both engines run it).
    pub model: Arc<Model>,
    pub tokenizer: Rc<Tokenizer>,
    /// An instruction-tuned model's chat template (`None`: it has none), or
    /// why it could not be read (said when chat is asked for).
    pub chat: Result<Option<ChatTemplate>, String>,
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

/// Why `chat=yes` changes nothing on this model.
const NO_TEMPLATE: &str = "chat: this model has no chat template (an instruction-tuned model's \
    tokenizer_config.json holds one), so the prompt is read as it is";

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

    /// [`variant`](Self::variant) with its int8 or int4 matrices multiplying
    /// 8-bit activations (the CLI's `--activations int8`), in the CPU
    /// engine's layout: for the CPU engine only
    /// ([`Engine::takes_int8_activations`]).
    pub fn variant_int8_activations(&self, format: Format) -> Result<Arc<Model>, String> {
        let mut model = Arc::unwrap_or_clone(self.variant(format)?);
        if model.weights.int8_activations() || !model.weights.use_int8_activations() {
            let name = format.name();
            return Err(format!("8-bit activations multiply int8 or int4 weights, not {name}"));
        }
        model.weights.use_cpu_layout();
        Ok(Arc::new(model))
    }

    /// The engine, to open sessions on other models with ([`open_like`]).
    pub fn engine(&self) -> Engine {
        self.engine.clone()
    }

    /// Whether chat means anything here: the model has a chat template (or
    /// one that could not be read, which chat then names).
    pub fn chats(&self) -> bool {
        !matches!(self.chat, Ok(None))
    }

    /// `prompt` as a run starts from it: as it is, or with `chat` (the
    /// system turn and the earlier turns) the user's turn in the model's chat
    /// template. A model without a template reads the prompt as it is, and
    /// the second value says so.
    pub fn prompt(
        &self,
        prompt: &str,
        chat: Option<&Chat>,
    ) -> Result<(ChatPrompt, Option<String>), String> {
        let plain = || -> Result<ChatPrompt, String> {
            let ids = self.tokenizer.encode(prompt).map_err(|e| e.to_string())?;
            Ok(ChatPrompt { text: prompt.to_string(), ids, end_of_turn: Vec::new() })
        };
        let Some(chat) = chat else { return Ok((plain()?, None)) };
        match &self.chat {
            Ok(Some(template)) => {
                let read =
                    template.prompt(&self.tokenizer, chat.system_turn(), &chat.turns, prompt);
                Ok((read.map_err(|e| e.to_string())?, None))
            }
            Ok(None) => Ok((plain()?, Some(NO_TEMPLATE.to_string()))),
            Err(why) => Err(format!("chat: {why}")),
        }
    }

    /// The conversation the model reads for `prompt` after `chat`'s turns,
    /// without encoding it: `None` where the model has no readable chat
    /// template (or the turns do not make a conversation, which a run says).
    pub fn conversation(&self, prompt: &str, chat: &Chat) -> Option<String> {
        let Ok(Some(template)) = &self.chat else { return None };
        template.conversation(chat.system_turn(), &chat.turns, prompt).ok()
    }

    /// A chat reply's text from its ids: without the end of turn the run
    /// stopped at, and before the first of `stops` (as the output shows it).
    pub fn reply_text(&self, ids: &[u32], stops: &[String]) -> String {
        let ends = match &self.chat {
            Ok(Some(template)) => template.end_of_turn(&self.tokenizer),
            _ => Vec::new(),
        };
        let end = ids.iter().position(|id| ends.contains(id));
        let ids = &ids[..end.unwrap_or(ids.len())];
        let mut text = self.tokenizer.decode(ids).unwrap_or_default();
        if let Some(at) = engine::sample::first_stop(&text, stops) {
            text.truncate(at);
        }
        text
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
            // In JavaScript arrays, as the load fetched them.
            let file = async |name: &str| {
                let gone = || format!("{} is no longer there", source.place(name));
                source.get_array(name, |_, _| ()).await?.ok_or_else(gone)
            };
            let config = file("config.json").await?.to_vec();
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
    /// The `activations=int8` parameter (taken only with int8 or int4
    /// weights, and then with `force_cpu`).
    pub int8_activations: bool,
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
    let LoadChoice { force_cpu, weights, int8_activations, kernels, confirmed } = choice;
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
    let (mut model, tokenizer, lossless) = prepare(&source, &fetched, weights, &progress).await?;
    if int8_activations && force_cpu {
        // The page's copy too (the lenses, the CPU engine here where no
        // worker starts): one set of numbers on both sides.
        let mut acts8 = Arc::unwrap_or_clone(model);
        acts8.weights.use_int8_activations();
        model = Arc::new(acts8);
    }
    let held = WeightsHeld {
        format: model.format(),
        bytes: model.weights.bytes(),
        int8_activations: model.weights.int8_activations(),
    };
    times.prepare_ms = laps.lap();
    let on_gpu = match ctx {
        Ok(ctx) => open_gpu(ctx, model.clone(), kernels, held, on_lost, &progress, done).await,
        Err(reason) => Err(reason),
    };
    let (engine, backend) = match on_gpu {
        Ok(opened) => opened,
        Err(reason) => {
            progress(Progress { what: "starting the CPU worker".into(), ..checking(done) });
            let (engine, thread) = open_cpu(&fetched, model.clone()).await;
            (engine, Backend::Cpu { reason, held, thread })
        }
    };
    let chat = chat_template(&source, &fetched);
    drop(fetched);
    times.engine_ms = laps.lap();
    times.ready_at_ms = since_page_start();
    let tokenizer = Rc::new(tokenizer);
    Ok(Lab { model, tokenizer, chat, backend, lossless, source, engine, times })
}

/// Progress past the download: `done` bytes of `done`.
fn checking(done: u64) -> Progress {
    Progress { what: "checking the model".into(), loaded: done, total: Some(done) }
}

/// The fetched files parsed and checked, the weights in the format
/// `weights` chooses; whether that format holds them exactly.
async fn prepare(
    source: &ModelSource,
    fetched: &Fetched,
    weights: WeightsChoice,
    progress: &impl Fn(Progress),
) -> Result<(Arc<Model>, Tokenizer, bool), LoadError> {
    progress(checking(fetched.bytes));
    // f16 held (weights=auto or f16): an f16 checkpoint's matrices are read
    // as they are stored, not widened to f32 first (half the page's memory);
    // int8, int4 and bf16 are packed matrix by matrix as they are read.
    if let Some(format) = weights.packed_on_read() {
        let what = format!("reading the weights as {}", format.name());
        progress(Progress { what, ..checking(fetched.bytes) });
        yield_to_browser().await;
    }
    let parsed = parse(source, fetched, weights);
    if parsed.is_err() {
        // A corrupt file must not stay cached: the retry downloads it again.
        source.forget(&ALL_FILES).await;
    }
    let (model, tokenizer) = parsed?;
    tokenizer_fits(&model, &tokenizer)?;
    let format = weights.format(&model);
    let lossless = format == Format::F32 || model.exact_in(format);
    if model.format() != format {
        let what = format!("packing the weights as {}", format.name());
        progress(Progress { what, ..checking(fetched.bytes) });
        yield_to_browser().await;
    }
    let model = Arc::new(model.into_format(format).map_err(|e| e.to_string())?);
    Ok((model, tokenizer, lossless))
}

/// The model on the GPU of `ctx`, its kernels chosen (timed where `kernels`
/// asks, remembered in localStorage), or why the CPU engine runs instead.
async fn open_gpu(
    ctx: GpuContext,
    model: Arc<Model>,
    kernels: KernelsChoice,
    held: WeightsHeld,
    on_lost: impl Fn(String) + Send + 'static,
    progress: &impl Fn(Progress),
    done: u64,
) -> Result<(Engine, Backend), CpuReason> {
    let adapter = ctx.adapter_name();
    ctx.on_lost(on_lost);
    let what = "uploading weights to the GPU (and choosing its kernels)".into();
    progress(Progress { what, loaded: done, total: Some(done) });
    let memory = Some(Rc::new(remembered::LocalStorage) as Rc<dyn Memory>);
    let engine = EngineChoice::Gpu { ctx: Box::new(ctx), kernels, memory };
    // Converted already, so the opener keeps the model as it is (no copy).
    let weights = WeightsChoice::Exactly(model.format());
    match open(model, Choice { engine, weights }).await {
        Ok((engine, chose)) => {
            let chosen = chose.kernels.expect("the GPU engine chooses its kernels");
            Ok((engine, Backend::WebGpu { adapter, held, kernels: chosen }))
        }
        Err(e) => Err(CpuReason::NoWebGpu(format!("the GPU could not take this model: {e}"))),
    }
}

/// The CPU engine in its worker (which loads its own copy of the files), or
/// on the page's thread where no worker starts, with the thread it runs on.
async fn open_cpu(fetched: &Fetched, model: Arc<Model>) -> (Engine, CpuThread) {
    match CpuWorker::start(&fetched.config, &fetched.weights, &model).await {
        Ok(w) => {
            let thread = worker_thread(&w);
            match open_worker(w, model.clone()).await {
                Ok(engine) => (engine, thread),
                Err(why) => (page_engine(model), CpuThread::Page(why)),
            }
        }
        Err(why) => (page_engine(model), CpuThread::Page(why)),
    }
}

/// What the self-test's model check runs: a prompt every GPT-2 tokenizer
/// encodes, then this many greedy steps.
const SELF_TEST_PROMPT: &str = "To be, or not to be";
const SELF_TEST_STEPS: usize = 16;

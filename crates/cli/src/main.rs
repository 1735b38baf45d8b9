//! `decode-lab`: the engine from the command line, for developers, benches and
//! automated checks. `generate` streams text, `logits` prints raw logits as
//! JSON, `bench` prints speed and per-token GPU traffic, `random-model` writes
//! a randomly initialised GPT-2 for benches and tests.

mod bench;
mod random_model;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use engine::generate::Generator;
use engine::gpu::{GpuContext, GpuModel, GpuSession};
use engine::model::{Model, TextStream, Tokenizer};
use engine::sample::Sampler;
use engine::{EngineError, Result, Session, Wanted};

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
        #[arg(long, default_value_t = 100)]
        max_tokens: usize,
        /// 0 means greedy. Negative values reach the engine's own check (a clearer message).
        #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
        temperature: f32,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Print `{"logits": [[...], ...]}`: one row of vocab_size logits per input token.
    Logits {
        #[arg(long)]
        model: PathBuf,
        /// Comma-separated token ids, e.g. 12,7,99.
        #[arg(long, value_delimiter = ',')]
        tokens: Vec<u32>,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        #[arg(long, value_enum, default_value = "prefill")]
        mode: Mode,
    },
    /// Print prefill time, decode tokens/s and per-token dispatches, submits and bytes.
    Bench {
        #[arg(long)]
        model: PathBuf,
        #[arg(long, value_enum, default_value = "gpu")]
        backend: Backend,
        #[arg(long, default_value_t = 64)]
        prompt_len: usize,
        #[arg(long, default_value_t = 64)]
        tokens: usize,
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
        #[arg(long, default_value_t = 2048)]
        vocab_size: usize,
        #[arg(long, default_value_t = 256)]
        n_positions: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match pollster::block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("decode-lab: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> Result<()> {
    match command {
        Command::Generate {
            model,
            prompt,
            backend,
            max_tokens,
            temperature,
            seed,
        } => generate(&model, &prompt, backend, max_tokens, temperature, seed).await,
        Command::Logits {
            model,
            tokens,
            backend,
            mode,
        } => logits(&model, &tokens, backend, mode).await,
        Command::Bench {
            model,
            backend,
            prompt_len,
            tokens,
        } => {
            let session = open(&model, backend).await?;
            bench::run(session, prompt_len, tokens).await
        }
        Command::RandomModel {
            out,
            n_layer,
            n_head,
            n_embd,
            vocab_size,
            n_positions,
            seed,
        } => random_model::write(&out, n_layer, n_head, n_embd, vocab_size, n_positions, seed),
    }
}

/// Loads the model in `dir` and opens a session on the chosen backend.
pub async fn open(dir: &Path, backend: Backend) -> Result<Session> {
    let model = Arc::new(Model::from_dir(dir)?);
    Ok(match backend {
        Backend::Cpu => Session::Cpu(engine::cpu::CpuSession::new(model)),
        Backend::Gpu => {
            let gpu = GpuModel::new(GpuContext::new().await?, model).await?;
            Session::Gpu(GpuSession::new(gpu)?)
        }
    })
}

async fn generate(
    dir: &Path,
    prompt: &str,
    backend: Backend,
    max_tokens: usize,
    temperature: f32,
    seed: u64,
) -> Result<()> {
    let tokenizer = Tokenizer::from_bytes(&engine::model::read(&dir.join("tokenizer.json"))?)?;
    let mut sampler = Sampler::new(temperature, seed)?;
    let session = open(dir, backend).await?;
    let eos = session.config().eos_token_id;
    let prompt_ids = tokenizer.encode(prompt)?;
    let mut generator = Generator::new(session);
    let (mut logits, crop) = generator.start(&prompt_ids).await?;
    if let Some(c) = crop {
        eprintln!(
            "[prompt cropped to its last {} tokens; {} dropped]",
            c.kept, c.dropped
        );
    }
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{prompt}");
    let mut stream = TextStream::default();
    for _ in 0..max_tokens {
        let token = sampler.sample(&logits);
        if Some(token) == eos {
            break;
        }
        if let Some(piece) = stream.push(&tokenizer, token)? {
            let _ = write!(stdout, "{piece}");
            let _ = stdout.flush();
        }
        let (next, crop) = generator.advance(token).await?;
        if let Some(c) = crop {
            eprintln!(
                "\n[context full: kept the last {} tokens, dropped {}]",
                c.kept, c.dropped
            );
        }
        logits = next;
    }
    let _ = writeln!(stdout);
    Ok(())
}

async fn logits(dir: &Path, tokens: &[u32], backend: Backend, mode: Mode) -> Result<()> {
    if tokens.is_empty() {
        return Err(EngineError::EmptyPrompt);
    }
    let mut session = open(dir, backend).await?;
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
    let _ = writeln!(
        std::io::stdout(),
        "{}",
        serde_json::json!({ "logits": rows })
    );
    Ok(())
}

//! `decode-lab selftest`: the page's `?selftest=1` on this machine's GPU —
//! every kernel against its CPU twin, then the model on the GPU against the
//! CPU engine; prints the report and fails if anything is off.

use std::path::PathBuf;
use std::sync::Arc;

use engine::model::{Model, Tokenizer};
use engine::open::Engine;
use engine::{EngineError, Result};

use crate::engine_args::{open_engine, Backend, KernelArgs};

/// `selftest`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    model: PathBuf,
    /// The model check's prompt.
    #[arg(long, default_value = "To be, or not to be")]
    prompt: String,
    /// Greedy steps of the model check.
    #[arg(long, default_value_t = 16)]
    steps: usize,
    /// The model check's weights, and the kernel profile checked (the kernel
    /// checks run that profile's kernels, in every format).
    #[command(flatten)]
    kernels: KernelArgs,
}

pub async fn run(a: Args) -> Result<()> {
    if a.steps == 0 || a.steps > 1024 {
        return Err(EngineError::Setting(format!("--steps must be 1 to 1024, got {}", a.steps)));
    }
    let model = Arc::new(Model::from_dir(&a.model)?);
    let prompt = Tokenizer::from_dir(&a.model)?.encode(&a.prompt)?;
    if prompt.is_empty() {
        return Err(EngineError::EmptyPrompt);
    }
    let (engine, chose) = open_engine(model, Backend::Gpu, a.kernels).await?;
    let Engine::Gpu(gpu) = engine else {
        return Err(EngineError::Gpu("the self-test needs the GPU engine".into()));
    };
    let report = engine::gpu::selftest::run(gpu, &prompt, a.steps, None).await;
    print!("{}", report.text());
    if let Some(k) = &chose.kernels {
        println!("kernels chosen: {}", k.describe());
    }
    match report.failure() {
        None => Ok(()),
        Some(why) => Err(EngineError::Gpu(why)),
    }
}

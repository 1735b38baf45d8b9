//! `decode-lab`: the engine from the command line, for developers, benches and
//! automated checks. Each subcommand's flags and work live in its module;
//! the flags that choose a model and its engine are written once
//! (`engine_args`) and flattened into every subcommand that opens one.

mod bandwidth;
mod bench;
mod bench_batch;
mod engine_args;
mod generate;
mod gpu_bench;
mod kernel_times;
mod kv_quality;
mod logits;
mod random_model;
mod sample;
mod selftest;
mod serve_sim;
mod speculate;
mod widgets;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use engine::Result;

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

#[derive(Subcommand)]
enum Command {
    /// Generate text from a prompt, streaming it as it is decoded.
    Generate(generate::Args),
    /// Run the sampling pipeline on given logits, or on a model's next token after a prompt, and print every stage.
    Sample(sample::Args),
    /// Print `{"tokens": [...], "logits": [[...], ...]}`: the input's ids and one row of vocab_size logits per input token.
    Logits(logits::Args),
    /// Print prefill time, decode tokens/s and per-token dispatches, submits and bytes.
    Bench(bench::Args),
    /// What KV cache policies cost in quality: over a held-out text (the
    /// model's heldout.txt unless --text), each policy's next-token
    /// distributions against the full cache's fed the same tokens — bits per
    /// byte, mean KL and same top-1 — the kv-budget widget's figures.
    KvQuality(kv_quality::Args),
    /// Serve an arrival trace on B slots under one scheduler and print its figures and texts.
    ServeSim(serve_sim::Args),
    /// The page's `?selftest=1` on this machine's GPU: every kernel against its
    /// CPU twin, then the model on the GPU against the CPU engine; prints the
    /// report and fails if anything is off.
    Selftest(selftest::Args),
    /// Everything a machine with a real GPU is measured on: the self-test of
    /// both kernel profiles, then bench on every model in every weight format
    /// with each profile; writes gpu-bench.txt, .json and .log into --out.
    GpuBench(gpu_bench::Args),
    /// The page's widgets: each `widget=` name, whether it runs on `logits=`,
    /// the controls it shows by default and its title (EMBEDDING.md explains them).
    Widgets(widgets::Args),
    /// Write a randomly initialised GPT-2 (config.json + model.safetensors).
    RandomModel(random_model::Args),
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

async fn run(command: Command) -> Result<()> {
    match command {
        Command::Generate(a) => generate::run(a).await,
        Command::Sample(a) => sample::command(a).await,
        Command::Logits(a) => logits::run(a).await,
        Command::Bench(a) => bench::run(a).await,
        Command::KvQuality(a) => kv_quality::command(a).await,
        Command::ServeSim(a) => serve_sim::command(a).await,
        Command::Selftest(a) => selftest::run(a).await,
        Command::GpuBench(a) => gpu_bench::command(a).await,
        Command::Widgets(a) => widgets::run(a),
        Command::RandomModel(a) => random_model::run(a),
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

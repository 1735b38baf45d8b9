//! `decode-lab serve-sim`: an arrival trace (a typed file, or a seeded
//! Poisson process) served by one scheduler on B slots of this device's
//! engine; prints the figures (throughput, time to first token and
//! end-to-end latency, slot utilisation, wasted slot-steps) and each
//! request's text, ✓ when it equals the request's run alone.

use std::path::PathBuf;
use std::sync::Arc;

use engine::model::Tokenizer;
use engine::open::Engine;
use engine::sample::Settings;
use engine::serve::{figures, replay, run_alone, trace, Scheduler, PROMPTS};
use engine::{Batch, EngineError, Result};

use crate::engine_args::{EngineArgs, PipelineArgs};

/// The trace and the scheduler. A typed trace says each request's arrival,
/// length and seed, so the flags that make a Poisson trace cannot be given
/// with it; static batching's wait applies to static batching alone.
#[derive(clap::Args)]
pub struct SimArgs {
    /// A typed trace: one request a line, `step prompt_index max_tokens seed`.
    #[arg(long, conflicts_with_all = ["rate", "requests", "max_tokens", "seed"])]
    trace: Option<PathBuf>,
    /// Arrivals per decode step (a seeded Poisson process).
    #[arg(long, default_value_t = 0.5)]
    rate: f64,
    #[arg(long, default_value_t = 8)]
    requests: usize,
    #[arg(long, default_value_t = 4)]
    slots: usize,
    /// once, static or continuous.
    #[arg(long, default_value = "continuous")]
    scheduler: String,
    /// Static batching's wait for a full batch, in steps, before it starts with fewer
    /// (default 4; only with --scheduler static).
    #[arg(long)]
    timeout: Option<usize>,
    /// Tokens each request of a Poisson trace asks for.
    #[arg(long, default_value_t = 16)]
    max_tokens: usize,
    /// The Poisson trace's seed (arrivals, prompts, and each request's sampling seed).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A prompt of the trace's list (repeat; default: four built-in ones).
    #[arg(long)]
    prompt: Vec<String>,
}

/// `serve-sim`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    sim: SimArgs,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// Opens the model and serves the trace.
pub async fn command(a: Args) -> Result<()> {
    a.pipeline.settings().validate()?;
    let (engine, _) = a.engine.engine_for(Arc::new(a.engine.load()?)).await?;
    let tokenizer = Tokenizer::from_dir(&a.engine.model)?;
    run(engine, &tokenizer, a.sim, a.pipeline.settings()).await
}

pub async fn run(
    engine: Engine,
    tokenizer: &Tokenizer,
    args: SimArgs,
    settings: Settings,
) -> Result<()> {
    let scheduler = scheduler(&args)?;
    if !(1..=64).contains(&args.slots) {
        return Err(EngineError::Setting(format!("--slots {}: give 1 to 64", args.slots)));
    }
    let texts: Vec<String> = match args.prompt.is_empty() {
        true => PROMPTS.iter().map(|p| p.to_string()).collect(),
        false => args.prompt.clone(),
    };
    let prompts: Vec<Vec<u32>> =
        texts.iter().map(|t| tokenizer.encode(t)).collect::<Result<_>>()?;
    if prompts.iter().any(Vec::is_empty) {
        return Err(EngineError::EmptyPrompt);
    }
    let requests = match &args.trace {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| EngineError::Setting(format!("--trace {}: {e}", path.display())))?;
            trace::parse(&text, prompts.len())?
        }
        None => {
            trace::poisson(args.requests, args.rate, prompts.len(), args.max_tokens, args.seed)?
        }
    };
    let sessions = (0..args.slots).map(|_| engine.session()).collect::<Result<Vec<_>>>()?;
    let mut batch = Batch::new(sessions)?;
    let eos = batch.sessions()[0].config().eos_token_id;
    let out = replay(&mut batch, &requests, &prompts, &settings, scheduler, eos, |_| true).await?;
    print_figures(&args, &requests, &out);
    for (i, (r, served)) in requests.iter().zip(&out.served).enumerate() {
        let mut session = engine.session()?;
        let alone =
            run_alone(&mut session, &prompts[r.prompt], &settings, r.seed, r.max_tokens).await?;
        let mark = if alone == served.tokens { "✓" } else { "✗ differs from its run alone" };
        let text = tokenizer.decode(&served.tokens)?;
        println!(
            "[request {i}, arrives at step {}, seed {}] {mark}\n{}{text}",
            r.arrival, r.seed, texts[r.prompt]
        );
    }
    Ok(())
}

/// `--scheduler` (and static batching's `--timeout`, only with it).
fn scheduler(args: &SimArgs) -> Result<Scheduler> {
    match (args.scheduler.as_str(), args.timeout) {
        ("static", timeout) => Ok(Scheduler::Static { timeout: timeout.unwrap_or(4) }),
        (_, Some(_)) => Err(EngineError::Setting(
            "--timeout is static batching's wait: give it with --scheduler static".into(),
        )),
        ("once", None) => Ok(Scheduler::Once),
        ("continuous", None) => Ok(Scheduler::Continuous),
        (other, None) => Err(EngineError::Setting(format!(
            "--scheduler {other}: one of once, static, continuous"
        ))),
    }
}

/// The replay's figures: throughput, latencies, slot use.
fn print_figures(
    args: &SimArgs,
    requests: &[engine::serve::trace::Request],
    out: &engine::serve::Replay,
) {
    let f = figures(requests, out);
    println!(
        "scheduler {} on {} slots: {} requests, {} tokens in {} steps, {:.1} ms",
        args.scheduler,
        args.slots,
        requests.len(),
        f.tokens,
        f.steps,
        out.wall_ms
    );
    println!("throughput        {:.1} tokens/s", f.tokens_per_s);
    let spread = |s: engine::serve::Spread, unit: &str| {
        format!("mean {:.1}, p50 {:.1}, p95 {:.1} {unit}", s.mean, s.p50, s.p95)
    };
    println!("first token       {} | {}", spread(f.ttft_steps, "steps"), spread(f.ttft_ms, "ms"));
    println!("end to end        {} | {}", spread(f.e2e_steps, "steps"), spread(f.e2e_ms, "ms"));
    let used = out.cells.first().map_or(0, Vec::len);
    println!(
        "slot utilisation  {:.1} % of {used} slot(s) ({} slot-steps wasted)",
        f.utilisation * 100.0,
        f.wasted
    );
}

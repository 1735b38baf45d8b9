//! `decode-lab bench`: prefill a random prompt, then decode token by token,
//! and print what each step cost. Figures, not assertions.

use std::fmt::Write as _;
use std::io::Write;

use engine::open::Chose;
use engine::{EngineError, Result, Session, Wanted};
use serde::Serialize;

use crate::engine_args::{check_batch_size, CacheArgs, EngineArgs};
use crate::{bandwidth, bench_batch, kernel_times};

/// What to measure: the sizes, and the comparison paths of the cost lessons.
pub struct Plan {
    pub prompt_len: usize,
    pub tokens: usize,
    /// Each decode step re-runs the whole sequence (no KV cache).
    pub no_cache: bool,
    /// The prompt goes through the decode path one token at a time.
    pub prefill_by_decode: bool,
    /// Also time each kernel of a decode step and of the prefill alone
    /// (where the device has timestamp queries).
    pub kernel_times: bool,
    /// Also decode this many continuations as one batched step each (1: no batch figures).
    pub batch: usize,
}

/// One run's headline figures (`gpu-bench` collects them into its table and JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub backend: String,
    /// The kernel profile (GPU only) and why.
    pub kernels: Option<String>,
    pub weights: String,
    pub weight_bytes: u64,
    pub prefill_ms: f64,
    pub decode_ms_per_token: f64,
    /// The decode steps' GPU time per token, where the device has timestamps.
    pub gpu_ms_per_token: Option<f64>,
    pub tokens_per_s: f64,
    pub dispatches_per_token: f64,
    /// Bytes a decode step must read (mean over the steps).
    pub reads_per_token: f64,
    pub read_bytes_per_s: f64,
    /// The steps' reads over their time (GPU time where there is one) against the read rate.
    pub share_of_read_rate: f64,
    /// The cost record of a decode step (GPU only): summed and longest chains.
    pub chain_sum: Option<u64>,
    pub chain_max: Option<u64>,
}

/// `bench`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
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
}

/// Opens the model as the flags say, benchmarks it and prints the figures.
pub async fn run(a: Args) -> Result<()> {
    check_batch_size(a.batch)?;
    let (session, chose) = a.engine.open(&a.cache).await?;
    let plan = Plan {
        prompt_len: a.prompt_len,
        tokens: a.tokens,
        no_cache: a.no_cache,
        prefill_by_decode: a.prefill_by_decode,
        batch: a.batch,
        kernel_times: a.kernel_times,
    };
    let (_, text) = measure(session, chose, plan).await?;
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}

/// [`run`]'s figures and text.
pub async fn measure(mut session: Session, chose: Chose, plan: Plan) -> Result<(Figures, String)> {
    let c = session.config().clone();
    check_sizes(&plan, c.n_positions)?;
    let t = time_steps(&mut session, &plan).await?;
    let mut out = header(&session, &chose, &plan);
    step_lines(&session, &plan, &t, &mut out);
    // Read from the cache itself: under a --kv-policy it holds fewer rows than positions.
    let cache = session.kv_bytes().await?;
    let held = cache.in_use as f64 / session.pos().max(1) as f64;
    let _ = writeln!(
        out,
        "kv cache in use    {} bytes ({} allocated: the context, or the policy's budget; {held:.0} bytes per position seen)",
        cache.in_use, cache.allocated
    );
    let device = session.device_figures().await?;
    let decoded = bandwidth::Decoded { stats: t.decode, tokens: plan.tokens, reads: t.reads };
    if !plan.no_cache {
        bandwidth::lines(&decoded, &device, &session.backend_name(), &mut out);
    }
    let costs = session.decode_costs();
    if let Some(costs) = &costs {
        let (weights, kv) = session.step_reads();
        bandwidth::cost_table(costs, session.pos(), weights + kv, &mut out);
    }
    if plan.kernel_times {
        kernel_times::lines(&session, plan.prompt_len, &mut out).await?;
    }
    if plan.batch > 1 {
        let alone_ms = t.decode.wall_ms;
        bench_batch::batch(
            &session,
            &t.prompt,
            plan.tokens,
            plan.batch,
            alone_ms,
            &device,
            &mut out,
        )
        .await?;
    }
    bench_batch::sampling(&mut out);
    let figures = figures(&session, &chose, &t, &decoded, &device, costs.as_deref());
    Ok((figures, out))
}

/// Refused, not clamped: a figure measured on other sizes than asked for
/// would be reported under the wrong label.
fn check_sizes(plan: &Plan, n_positions: usize) -> Result<()> {
    let Plan { prompt_len, tokens, .. } = *plan;
    if prompt_len == 0 || tokens == 0 || prompt_len + tokens > n_positions {
        return Err(EngineError::Setting(format!(
            "--prompt-len {prompt_len} and --tokens {tokens} must each be at least 1 and together at most the model's context of {n_positions} positions"
        )));
    }
    Ok(())
}

/// What the timed prefill and decode steps cost.
struct Timed {
    /// A fixed pseudo-random prompt, so runs are comparable.
    prompt: Vec<u32>,
    /// The median of the timed prefill passes.
    prefill: engine::StepStats,
    /// Each timed prefill pass's wall time, in the order run.
    prefill_walls: Vec<f64>,
    /// The decode steps, summed.
    decode: engine::StepStats,
    /// (weights, KV cache) bytes the decode steps had to read, summed.
    reads: (u64, u64),
    /// The CLI's greedy choice over each step's logits, summed.
    argmax_ms: f64,
    /// The same steps reading back only the greedy token, and whether they chose the same.
    greedy: Option<(engine::StepStats, bool)>,
    /// The greedy ids: the prefill's, then each step's (what a peer's run is checked against).
    ids: Vec<u32>,
}

/// Prefill passes timed after the warm-up; the median is the figure. One
/// pass alone misleads: on this project's two-core machine the first pass
/// after the warm-up of an int4 model with int8 activations on two threads
/// took 50–85 ms in about half the runs where every later pass took 38–41
/// (both threads' parts slower, the same page faults), and a single timed
/// pass reported that as the model's prefill.
const PREFILL_PASSES: usize = 3;

/// A warm-up, then the prefill (its median of [`PREFILL_PASSES`]) and the
/// decode steps the plan asks for.
async fn time_steps(session: &mut Session, plan: &Plan) -> Result<Timed> {
    let vocab = session.config().vocab_size;
    let prompt: Vec<u32> = (0..plan.prompt_len).map(|i| ((i * 7919 + 13) % vocab) as u32).collect();
    // Warm-up: first dispatches compile pipelines and fault in memory.
    session.prefill(&prompt, Wanted::Last).await?;
    session.decode(0).await?;
    let mut passes = Vec::with_capacity(PREFILL_PASSES);
    let mut logits = Vec::new();
    for _ in 0..PREFILL_PASSES {
        session.rewind(0)?;
        let stats;
        (logits, stats) = match plan.prefill_by_decode {
            true => session.prefill_by_decode(&prompt).await?,
            false => (session.prefill(&prompt, Wanted::Last).await?, session.last_stats()),
        };
        passes.push(stats);
    }
    let prefill_walls: Vec<f64> = passes.iter().map(|p| p.wall_ms).collect();
    passes.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
    let prefill = passes.swap_remove(PREFILL_PASSES / 2); // the median pass
    let mut next = engine::sample::argmax(&logits);
    let first = next;
    let mut history = prompt.clone();
    let (mut decode, mut reads, mut argmax_ms) = (engine::StepStats::default(), (0, 0), 0.0);
    for _ in 0..plan.tokens {
        let (w, kv) = session.step_reads();
        reads = (reads.0 + w, reads.1 + kv);
        history.push(next);
        let logits = match plan.no_cache {
            true => session.decode_without_cache(&history).await?,
            false => session.decode(next).await?,
        };
        decode.add(session.last_stats());
        let start = std::time::Instant::now();
        next = engine::sample::argmax(&logits);
        argmax_ms += start.elapsed().as_secs_f64() * 1e3;
    }
    history.push(next);
    let ids = history[plan.prompt_len..].to_vec();
    // The same steps again reading back only the greedy token (argmax on the
    // device): what a caller that needs no distribution pays.
    let greedy = match plan.no_cache {
        true => None,
        false => Some(greedy_steps(session, plan.prompt_len, first, &history).await?),
    };
    Ok(Timed { prompt, prefill, prefill_walls, decode, reads, argmax_ms, greedy, ids })
}

/// The engine, kernels, model, weights, sizes and path.
fn header(session: &Session, chose: &Chose, plan: &Plan) -> String {
    let c = session.config();
    let mut out = String::new();
    let _ = writeln!(out, "backend            {}", session.backend_name());
    if let Some(k) = &chose.kernels {
        let _ = writeln!(out, "kernels            {}", k.describe());
    }
    let _ = writeln!(
        out,
        "model              {} layers, {} dims, {} heads, vocab {}, {} params",
        c.n_layer,
        c.n_embd,
        c.n_head,
        c.vocab_size,
        c.n_params()
    );
    let (format, weight_bytes) = session.weights();
    let mb = weight_bytes as f64 / 1e6;
    let acts = if chose.int8_activations { "; int8 activations (--activations int8)" } else { "" };
    let name = format.name();
    let _ = writeln!(out, "weights            {name}, {weight_bytes} bytes ({mb:.1} MB){acts}");
    let (prompt_len, tokens) = (plan.prompt_len, plan.tokens);
    let _ = writeln!(out, "prompt             {prompt_len} tokens; decoded {tokens} tokens");
    let path = match (plan.prefill_by_decode, plan.no_cache) {
        (false, false) => "one prefill pass, cached decode",
        (true, false) => "prefill token by token through decode, cached decode",
        (false, true) => {
            "one prefill pass, decode without KV cache (each step re-runs the sequence)"
        }
        (true, true) => "prefill token by token, decode without KV cache",
    };
    let _ = writeln!(out, "path               {path}");
    out
}

/// The prefill's and the decode steps' figures, per token.
fn step_lines(session: &Session, plan: &Plan, t: &Timed, out: &mut String) {
    let (prefill, decode, n) = (&t.prefill, &t.decode, plan.tokens as f64);
    let _ = writeln!(
        out,
        "prefill            {:.2} ms ({:.0} tokens/s), {} dispatches, {} submits; the median of {} passes: {} ms in the order run",
        prefill.wall_ms,
        plan.prompt_len as f64 / prefill.wall_ms * 1e3,
        prefill.dispatches,
        prefill.submits,
        t.prefill_walls.len(),
        t.prefill_walls.iter().map(|ms| format!("{ms:.2}")).collect::<Vec<_>>().join(", ")
    );
    let (ms, rate) = (decode.wall_ms / n, n / decode.wall_ms * 1e3);
    let _ = writeln!(out, "decode             {ms:.2} ms/token, {rate:.1} tokens/s");
    let ids: Vec<String> = t.ids.iter().map(u32::to_string).collect();
    let _ = writeln!(out, "greedy ids         {}", ids.join(" "));
    let timer = match (prefill.gpu_ms, decode.gpu_ms) {
        (Some(p), Some(d)) => format!("prefill {p:.2} ms, decode {:.2} ms/token (timestamp queries; the rest of the wall time is submit, wait and readback)", d / n),
        _ if session.kind() != engine::session::Kind::Gpu => {
            "none: the CPU engine has no device".to_string()
        }
        _ => "not offered by this device (wall time only)".to_string(),
    };
    let _ = writeln!(out, "gpu time           {timer}");
    if let Some(ms) = session.pipeline_compile_ms() {
        let _ = writeln!(out, "pipelines          compiled in {ms:.1} ms when the model loaded");
    }
    let (dispatches, submits) = (decode.dispatches as f64 / n, decode.submits as f64 / n);
    let _ = writeln!(out, "per decode token   {dispatches:.1} dispatches, {submits:.2} submits");
    wall_parts("wall per token", decode, n, t.argmax_ms / n, out);
    if let Some((g, same)) = &t.greedy {
        let _ = writeln!(
            out,
            "decode, greedy     {:.3} ms/token{}: the argmax on the device, {:.0} bytes read back a token ({})",
            g.wall_ms / n,
            g.gpu_ms.map_or(String::new(), |ms| format!(" (GPU {:.3} ms)", ms / n)),
            g.bytes_read as f64 / n,
            if *same { "the same tokens as above" } else { "OTHER TOKENS than above" }
        );
        wall_parts("  its wall", g, n, 0.0, out);
    }
    let (written, read) = (decode.bytes_written as f64 / n, decode.bytes_read as f64 / n);
    let _ =
        writeln!(out, "per decode token   {written:.0} bytes written, {read:.0} bytes read back");
}

/// The run's headline figures (`gpu-bench`'s table and JSON).
fn figures(
    session: &Session,
    chose: &Chose,
    t: &Timed,
    decoded: &bandwidth::Decoded,
    device: &engine::DeviceFigures,
    costs: Option<&[(engine::kernels::Kernel, engine::kernels::Cost)]>,
) -> Figures {
    let (decode, n) = (&t.decode, decoded.tokens as f64);
    let (format, weight_bytes) = session.weights();
    let chains = costs.map(|c| c.iter().map(|(_, c)| c.chain));
    Figures {
        backend: session.backend_name(),
        kernels: chose.kernels.as_ref().map(|k| k.describe()),
        weights: format.name().to_string(),
        weight_bytes,
        prefill_ms: t.prefill.wall_ms,
        decode_ms_per_token: decode.wall_ms / n,
        gpu_ms_per_token: decode.gpu_ms.map(|g| g / n),
        tokens_per_s: n / decode.wall_ms * 1e3,
        dispatches_per_token: decode.dispatches as f64 / n,
        reads_per_token: (t.reads.0 + t.reads.1) as f64 / n,
        read_bytes_per_s: device.read_bytes_per_s,
        share_of_read_rate: bandwidth::bandwidth(decoded, device).share(),
        chain_sum: chains.clone().map(|c| c.sum()),
        chain_max: chains.and_then(|c| c.max()),
    }
}

/// The decode steps of `history` after the prompt (its first `prompt_len`
/// tokens), taken again from the end of the prompt reading back only each
/// step's greedy token; their summed cost, and whether they chose the
/// tokens `history` holds.
async fn greedy_steps(
    session: &mut Session,
    prompt_len: usize,
    first: u32,
    history: &[u32],
) -> Result<(engine::StepStats, bool)> {
    session.rewind(prompt_len)?;
    let (mut next, mut same) = (first, true);
    let mut stats = engine::StepStats::default();
    for &want in &history[prompt_len + 1..] {
        next = session.decode_greedy(next).await?;
        stats.add(session.last_stats());
        same &= next == want;
    }
    Ok((stats, same))
}

/// Where the wall time of the steps went, per token: on the GPU engine the
/// submit, the wait for the device and the readback (the rest is the
/// engine's own bookkeeping), and the caller's greedy choice (`choose_ms`).
fn wall_parts(label: &str, s: &engine::StepStats, n: f64, choose_ms: f64, out: &mut String) {
    use std::fmt::Write as _;
    let parts = s.submit_ms + s.wait_ms + s.readback_ms;
    if parts == 0.0 {
        return; // the CPU engines submit nothing
    }
    let gpu = s.gpu_ms.map_or(String::new(), |g| format!(" (the GPU's own time {:.3})", g / n));
    let choose = match choose_ms > 0.0 {
        true => format!("; then choosing the greedy token from the logits {choose_ms:.3} ms"),
        false => String::new(),
    };
    let _ = writeln!(
        out,
        "{label:<19}{:.3} ms: encode + submit {:.3}, waiting for the GPU {:.3}{gpu}, readback {:.3}, the rest {:.3}{choose}",
        s.wall_ms / n,
        s.submit_ms / n,
        s.wait_ms / n,
        s.readback_ms / n,
        (s.wall_ms - parts) / n,
    );
}

//! `decode-lab bench`: prefill a random prompt, then decode token by token,
//! and print what each step cost. Figures, not assertions.

use std::io::Write;

use engine::open::Chose;
use engine::{Batch, EngineError, Result, Session, Wanted};
use serde::Serialize;

use crate::{bandwidth, kernel_times};

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

/// Runs the benchmark on an open session (`chose`: what the opener chose
/// for it) and prints the figures.
pub async fn run(session: Session, chose: Chose, plan: Plan) -> Result<()> {
    let (_, text) = measure(session, chose, plan).await?;
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}

/// [`run`]'s figures and text.
pub async fn measure(mut session: Session, chose: Chose, plan: Plan) -> Result<(Figures, String)> {
    let Plan { prompt_len, tokens, .. } = plan;
    let c = session.config().clone();
    // Refused, not clamped: a figure measured on other sizes than asked for
    // would be reported under the wrong label.
    if prompt_len == 0 || tokens == 0 || prompt_len + tokens > c.n_positions {
        return Err(EngineError::Setting(format!(
            "--prompt-len {prompt_len} and --tokens {tokens} must each be at least 1 and together at most the model's context of {} positions",
            c.n_positions
        )));
    }
    // A fixed pseudo-random prompt, so runs are comparable.
    let prompt: Vec<u32> =
        (0..prompt_len).map(|i| ((i * 7919 + 13) % c.vocab_size) as u32).collect();
    // Warm-up: first dispatches compile pipelines and fault in memory.
    session.prefill(&prompt, Wanted::Last).await?;
    session.decode(0).await?;
    session.rewind(0)?;

    let (logits, prefill) = match plan.prefill_by_decode {
        true => session.prefill_by_decode(&prompt).await?,
        false => (session.prefill(&prompt, Wanted::Last).await?, session.last_stats()),
    };
    let mut next = engine::sample::argmax(&logits);
    let first = next;
    let mut history = prompt.clone();
    let mut decode = engine::StepStats::default();
    let mut reads = (0, 0); // (weights, KV cache) bytes the decode steps must read
    let mut argmax_ms = 0.0; // the CLI's greedy choice over each step's logits
    for _ in 0..tokens {
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
    // The same steps again reading back only the greedy token (argmax on the
    // device): what a caller that needs no distribution pays.
    let greedy = match plan.no_cache {
        true => None,
        false => Some(greedy_steps(&mut session, prompt_len, first, &history).await?),
    };
    let n = tokens as f64;
    let mut out = String::new();
    use std::fmt::Write as _;
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
    let _ = writeln!(
        out,
        "weights            {}, {weight_bytes} bytes ({:.1} MB)",
        format.name(),
        weight_bytes as f64 / 1e6
    );
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
    let _ = writeln!(
        out,
        "prefill            {:.2} ms ({:.0} tokens/s), {} dispatches, {} submits",
        prefill.wall_ms,
        prompt_len as f64 / prefill.wall_ms * 1e3,
        prefill.dispatches,
        prefill.submits
    );
    let _ = writeln!(
        out,
        "decode             {:.2} ms/token, {:.1} tokens/s",
        decode.wall_ms / n,
        n / decode.wall_ms * 1e3
    );
    let timer = match (prefill.gpu_ms, decode.gpu_ms) {
        (Some(p), Some(d)) => format!("prefill {p:.2} ms, decode {:.2} ms/token (timestamp queries; the rest of the wall time is submit, wait and readback)", d / n),
        _ if matches!(session, Session::Cpu(_)) => "none: the CPU engine has no device".to_string(),
        _ => "not offered by this device (wall time only)".to_string(),
    };
    let _ = writeln!(out, "gpu time           {timer}");
    if let Some(ms) = session.pipeline_compile_ms() {
        let _ = writeln!(out, "pipelines          compiled in {ms:.1} ms when the model loaded");
    }
    let _ = writeln!(
        out,
        "per decode token   {:.1} dispatches, {:.2} submits",
        decode.dispatches as f64 / n,
        decode.submits as f64 / n
    );
    wall_parts("wall per token", &decode, n, argmax_ms / n, &mut out);
    if let Some((g, same)) = &greedy {
        let _ = writeln!(
            out,
            "decode, greedy     {:.3} ms/token{}: the argmax on the device, {:.0} bytes read back a token ({})",
            g.wall_ms / n,
            g.gpu_ms.map_or(String::new(), |ms| format!(" (GPU {:.3} ms)", ms / n)),
            g.bytes_read as f64 / n,
            if *same { "the same tokens as above" } else { "OTHER TOKENS than above" }
        );
        wall_parts("  its wall", g, n, 0.0, &mut out);
    }
    let _ = writeln!(
        out,
        "per decode token   {:.0} bytes written, {:.0} bytes read back",
        decode.bytes_written as f64 / n,
        decode.bytes_read as f64 / n
    );
    // Read from the cache itself: under a --kv-policy it holds fewer rows than positions.
    let cache = session.kv_bytes().await?;
    let held = cache.in_use as f64 / session.pos().max(1) as f64;
    let _ = writeln!(
        out,
        "kv cache in use    {} bytes ({} allocated: the context, or the policy's budget; {held:.0} bytes per position seen)",
        cache.in_use, cache.allocated
    );
    let device = session.device_figures().await?;
    let decoded = bandwidth::Decoded { stats: decode, tokens, reads };
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
        batch(&session, &prompt, tokens, plan.batch, decode.wall_ms, &device, &mut out).await?;
    }
    sampling(&mut out);
    let chains = costs.as_ref().map(|c| c.iter().map(|(_, c)| c.chain));
    let figures = Figures {
        backend: session.backend_name(),
        kernels: chose.kernels.as_ref().map(|k| k.describe()),
        weights: format.name().to_string(),
        weight_bytes,
        prefill_ms: prefill.wall_ms,
        decode_ms_per_token: decode.wall_ms / n,
        gpu_ms_per_token: decode.gpu_ms.map(|g| g / n),
        tokens_per_s: n / decode.wall_ms * 1e3,
        dispatches_per_token: decode.dispatches as f64 / n,
        reads_per_token: (reads.0 + reads.1) as f64 / n,
        read_bytes_per_s: device.read_bytes_per_s,
        share_of_read_rate: bandwidth::bandwidth(&decoded, &device).share(),
        chain_sum: chains.clone().map(|c| c.sum()),
        chain_max: chains.and_then(|c| c.max()),
    };
    Ok((figures, out))
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

/// B continuations of `prompt` (forks of one prefilled session), `tokens`
/// greedy steps each, two ways: one after another (B × `tokens` decode
/// steps) and as one batched step per token. `alone_ms` is one sequence's
/// decode time for the same steps, measured above.
async fn batch(
    session: &Session,
    prompt: &[u32],
    tokens: usize,
    size: usize,
    alone_ms: f64,
    device: &engine::DeviceFigures,
    out: &mut String,
) -> Result<()> {
    use std::fmt::Write as _;
    let mut base = session.fork()?;
    base.rewind(0)?;
    let first = base.prefill(prompt, Wanted::Last).await?;
    let sessions: Vec<Session> = (0..size).map(|_| base.fork()).collect::<Result<_>>()?;
    let mut batch = Batch::new(sessions)?;
    // Warm-up: the batch's first step writes every parameter slot.
    batch.decode(&vec![Some(engine::sample::argmax(&first)); size]).await?;
    for i in 0..size {
        batch.rewind(i, prompt.len())?;
    }
    // Continuation i starts from the i-th most likely token, so the rows differ.
    let mut order: Vec<u32> = (0..first.len() as u32).collect();
    order.sort_by(|&a, &b| first[b as usize].total_cmp(&first[a as usize]));
    let mut next: Vec<u32> = order[..size].to_vec();
    let mut step = engine::StepStats::default();
    for _ in 0..tokens {
        let logits = batch.decode(&next.iter().map(|&t| Some(t)).collect::<Vec<_>>()).await?;
        step.add(batch.last_stats());
        let vocab = logits.len() / size;
        next = logits.chunks_exact(vocab).map(engine::sample::argmax).collect();
    }
    let n = tokens as f64;
    let batched = (size * tokens) as f64 / step.wall_ms * 1e3;
    let alone = n / alone_ms * 1e3;
    let _ = writeln!(
        out,
        "batch of {size:<2}        {:.2} ms per step ({:.1} dispatches, {:.2} submits, {:.0} bytes read), {batched:.1} tokens/s aggregate",
        step.wall_ms / n,
        step.dispatches as f64 / n,
        step.submits as f64 / n,
        step.bytes_read as f64 / n,
    );
    let dispatch = device.dispatch_ms.map_or(String::new(), |d| {
        format!(
            ", one more dispatch {d:.4} ms ({:.2} ms for a batched step's)",
            d * step.dispatches as f64 / n
        )
    });
    let (_, weight_bytes) = session.weights();
    let _ = writeln!(
        out,
        "batched step       the weights once at the device's read rate: {:.2} ms{dispatch}",
        weight_bytes as f64 / device.read_bytes_per_s * 1e3,
    );
    let _ = writeln!(
        out,
        "one after another  {alone:.1} tokens/s aggregate, derived (not timed): one sequence's decode rate above, which {size} sequences in turn would share; batched is {:.2}x that",
        batched / alone
    );
    Ok(())
}

/// Time of the whole explained pipeline on a GPT-2-sized vocabulary (median of
/// 101 runs): a typical setting, and a costly one (no top-k, so top-p has to
/// walk a nucleus of thousands of tokens, plus every processor).
fn sampling(out: &mut String) {
    use std::fmt::Write as _;
    let vocab = 50_257;
    let logits: Vec<f32> = (0..vocab).map(|i| ((i * 7919 % 1000) as f32 / 100.0) - 5.0).collect();
    let history: Vec<u32> = (0..64).map(|i| (i * 389 % vocab) as u32).collect();
    let typical = engine::sample::Settings {
        temperature: 0.8,
        top_k: 50,
        top_p: 0.9,
        min_p: 0.05,
        ..Default::default()
    };
    let costly = engine::sample::Settings {
        temperature: 1.5,
        top_k: 0,
        top_p: 0.95,
        repetition_penalty: 1.1,
        frequency_penalty: 0.2,
        no_repeat_ngram: 3,
        ..Default::default()
    };
    for (name, settings) in
        [("T 0.8, k 50, p 0.9, min-p 0.05", typical), ("T 1.5, p 0.95, penalties", costly)]
    {
        let mut times: Vec<f64> = (0..101)
            .map(|_| {
                let start = std::time::Instant::now();
                let e =
                    engine::sample::explain(&logits, &history, &settings).expect("valid settings");
                std::hint::black_box(e);
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "sampling pipeline  {:.3} ms per step over {vocab} tokens ({name}; median of 101)",
            times[50]
        );
    }
}

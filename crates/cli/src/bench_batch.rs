//! The bench's comparisons beside the steps it times: a batch of
//! continuations decoded together against one after another, and the
//! sampling pipeline's time per step over a GPT-2-sized vocabulary.

use std::fmt::Write as _;

use engine::{Batch, Result, Session, Wanted};

/// B continuations of `prompt` (forks of one prefilled session), `tokens`
/// greedy steps each, two ways: one after another (B × `tokens` decode
/// steps) and as one batched step per token. `alone_ms` is one sequence's
/// decode time for the same steps, measured above.
pub async fn batch(
    session: &Session,
    prompt: &[u32],
    tokens: usize,
    size: usize,
    alone_ms: f64,
    device: &engine::DeviceFigures,
    out: &mut String,
) -> Result<()> {
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
pub fn sampling(out: &mut String) {
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

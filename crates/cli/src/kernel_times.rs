//! The bench's kernel times: each kernel of a decode step (and of the
//! prompt's prefill) run alone on the GPU, timed by timestamp queries, with
//! the rate its bytes were read at. What the cost record only ranks, this
//! measures: where a step's GPU time goes on this device.

use std::fmt::Write;

use engine::gpu::KernelTime;
use engine::kernels::Kernel;
use engine::{Result, Session};

/// Dispatches of a kernel back to back in its timed pass: one is too short
/// for the timestamps' resolution on a fast GPU.
const REPEATS: u32 = 20;

/// The decode step's kernel times, and the prefill's of `prompt_len` tokens,
/// written to `out`; nothing where the device has no timestamp queries.
pub async fn lines(session: &Session, prompt_len: usize, out: &mut String) -> Result<()> {
    let steps = [
        (None, "decode step".to_string()),
        (Some(prompt_len), format!("prefill of {prompt_len} tokens")),
    ];
    for (prefill, what) in steps {
        if let Some(times) = session.kernel_times(prefill, REPEATS).await? {
            table(&times, &what, session.pos(), out);
        }
    }
    Ok(())
}

/// One row per kernel (in the step's order): dispatches, GPU µs of one,
/// µs per step, and the rate of its cost record's bytes.
fn table(times: &[KernelTime], what: &str, pos: usize, out: &mut String) {
    let _ = writeln!(
        out,
        "kernel times       a {what} at position {pos}, each kernel alone ({REPEATS} dispatches back to back in a timed pass; repeats may find small matrices in cache, so GB/s can exceed DRAM's)"
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>5} {:>10} {:>10} {:>9}",
        "kernel", "runs", "µs/run", "µs/step", "GB/s"
    );
    let mut kernels: Vec<Kernel> = Vec::new();
    for t in times {
        if !kernels.contains(&t.kernel) {
            kernels.push(t.kernel);
        }
    }
    let row = |name: &str, mine: &[&KernelTime], out: &mut String| {
        let ms: f64 = mine.iter().map(|t| t.ms).sum();
        let bytes: u64 = mine.iter().filter_map(|t| t.cost.map(|c| c.bytes)).sum();
        let _ = writeln!(
            out,
            "  {:<22} {:>5} {:>10.2} {:>10.1} {:>9.1}",
            name,
            mine.len(),
            ms * 1e3 / mine.len().max(1) as f64,
            ms * 1e3,
            bytes as f64 / (ms * 1e-3).max(1e-12) / 1e9
        );
    };
    for k in kernels {
        let mine: Vec<&KernelTime> = times.iter().filter(|t| t.kernel == k).collect();
        row(k.name(), &mine, out);
    }
    row("total (alone, summed)", &times.iter().collect::<Vec<_>>(), out);
}

//! The bench's bandwidth figures: what a decode step must read, the rate it
//! achieved, that rate as a share of this device's measured read rate, and
//! what its dispatches cost; then the cost record of every dispatch of a
//! decode step (`kernels::Cost`), grouped by kernel, with totals.

use std::fmt::Write as _;

use engine::kernels::{Cost, Kernel};
use engine::lessons::cost::Bandwidth;
use engine::{DeviceFigures, StepStats};

/// The decode steps the bench took.
pub struct Decoded {
    /// Their summed cost.
    pub stats: StepStats,
    pub tokens: usize,
    /// (weights, KV cache) bytes they had to read, summed.
    pub reads: (u64, u64),
}

/// The steps' reads over their time (the device's own where it has
/// timestamps) against the device's read rate.
pub fn bandwidth(d: &Decoded, device: &DeviceFigures) -> Bandwidth {
    let n = d.tokens as f64;
    let (ms, device_clock) = match d.stats.gpu_ms {
        Some(gpu) => (gpu / n, true),
        None => (d.stats.wall_ms / n, false),
    };
    let bytes = (d.reads.0 + d.reads.1) as f64 / n;
    Bandwidth { bytes, ms, device_clock, read_bytes_per_s: device.read_bytes_per_s }
}

/// Appends the reads, the achieved rate and its share of the device's read rate.
/// `backend` names the adapter: where it is a card of known peak bandwidth
/// (`engine::peak`), the read rate is also given as a share of that peak.
pub fn lines(d: &Decoded, device: &DeviceFigures, backend: &str, out: &mut String) {
    let n = d.tokens as f64;
    let (weights, kv) = (d.reads.0 as f64 / n, d.reads.1 as f64 / n);
    let _ = writeln!(
        out,
        "reads per token    {:.1} MB: weights {:.1} MB, KV cache {:.2} MB = {kv:.0} bytes (the rows each step's query reads; mean over the steps)",
        (weights + kv) / 1e6,
        weights / 1e6,
        kv / 1e6
    );
    let b = bandwidth(d, device);
    let ms = b.ms;
    let peak = engine::peak::share(backend, device.read_bytes_per_s)
        .map_or(String::new(), |share| format!(": {share}"));
    let _ = writeln!(
        out,
        "device             read {:.2} GB/s (a buffer larger than its caches, summed: block_sum on a GPU{peak}), copy {:.2} GB/s (bytes copied a second; each read and written){}",
        device.read_bytes_per_s / 1e9,
        device.copy_bytes_per_s / 1e9,
        device.dispatch_ms.map_or(String::new(), |d| format!(", one more dispatch {d:.4} ms"))
    );
    let clock = if b.device_clock { "the steps' GPU time" } else { "the steps' wall time" };
    let _ = writeln!(
        out,
        "bandwidth          {:.2} GB/s over {clock}: {:.1} % of this device's read rate",
        b.achieved() / 1e9,
        100.0 * b.share()
    );
    if let Some(per) = device.dispatch_ms {
        let dispatches = d.stats.dispatches as f64 / n;
        let _ = writeln!(
            out,
            "dispatches         {dispatches:.0} × {per:.4} ms = {:.3} ms of the {ms:.3} ms step",
            dispatches * per
        );
    }
}

/// Appends the cost record of a decode step at position `pos` (`costs`, in
/// data-flow order), each kernel's dispatches on one line, and the totals
/// against `must_read`, the bytes the step must read.
pub fn cost_table(costs: &[(Kernel, Cost)], pos: usize, must_read: u64, out: &mut String) {
    let _ = writeln!(
        out,
        "cost record        a decode step at position {pos}, per dispatch (a model of structure: it ranks designs, it does not predict microseconds)"
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>5} {:>12} {:>7} {:>9} {:>12} {:>9}  coalesced",
        "kernel", "runs", "invocations", "chain", "Σ chain", "bytes", "B/inv"
    );
    let mut kernels: Vec<Kernel> = Vec::new();
    for (k, _) in costs {
        if !kernels.contains(k) {
            kernels.push(*k);
        }
    }
    for k in kernels {
        let mine: Vec<&Cost> = costs.iter().filter(|(c, _)| *c == k).map(|(_, c)| c).collect();
        let total = Cost::total(mine.iter().copied());
        let longest = mine.iter().map(|c| c.chain).max().unwrap_or(0);
        let coalesced = if total.coalesced { "yes" } else { "no" };
        let per = total.invocations / mine.len() as u64;
        row(out, k.name(), mine.len(), per, longest, &total, coalesced);
    }
    let t = Cost::total(costs.iter().map(|(_, c)| c));
    let longest = costs.iter().map(|(_, c)| c.chain).max().unwrap_or(0);
    let coalesced = if t.coalesced { "every weight and KV load" } else { "not all" };
    row(out, "total", costs.len(), t.invocations, longest, &t, coalesced);
    let _ = writeln!(
        out,
        "  dispatches per decode step = {} (runs); B/inv = bytes ÷ invocations, the bytes each invocation must bring in",
        costs.len()
    );
    let _ = writeln!(
        out,
        "  bytes read / bytes the step must read = {:.3} (weights {:.1} MB, KV rows {:.2} MB, activations {:.2} MB)",
        t.bytes as f64 / must_read.max(1) as f64,
        t.weights as f64 / 1e6,
        t.kv as f64 / 1e6,
        (t.bytes - t.weights - t.kv) as f64 / 1e6
    );
}

/// Bytes a dispatch reads per invocation it launches.
fn per_invocation(c: &Cost) -> f64 {
    c.bytes as f64 / c.invocations.max(1) as f64
}

/// One row of the cost table.
fn row(
    out: &mut String,
    name: &str,
    runs: usize,
    invocations: u64,
    longest: u64,
    t: &Cost,
    coalesced: &str,
) {
    let _ = writeln!(
        out,
        "  {name:<22} {runs:>5} {invocations:>12} {longest:>7} {:>9} {:>12} {:>9.1}  {coalesced}",
        t.chain,
        t.bytes,
        per_invocation(t)
    );
}

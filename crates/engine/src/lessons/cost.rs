//! The cost lessons' arithmetic over measured steps: a generation's timeline
//! and its llama-bench style figures (pp: prompt tokens/s, tg: generated
//! tokens/s), medians, the prompt lengths a time-to-first-token curve visits,
//! and a least-squares polynomial fit with its R².

use crate::step::StepStats;

/// One timed generation: the prompt's pass, then one entry per decode step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The prompt's pass (one forward call, or the sum of one decode step
    /// per prompt token when the prompt went in token by token).
    pub prefill: StepStats,
    /// One per generated token after the first (the first comes from the prefill's logits).
    pub decode: Vec<StepStats>,
}

impl Timeline {
    /// Tokens of the prompt.
    pub fn prompt_tokens(&self) -> usize {
        self.prefill.tokens
    }

    /// Time to first token: the prompt's pass, whose last logits give it.
    pub fn ttft_ms(&self) -> f64 {
        self.prefill.wall_ms
    }

    /// The median decode step.
    pub fn decode_ms(&self) -> Option<f64> {
        median(&self.decode.iter().map(|s| s.wall_ms).collect::<Vec<_>>())
    }

    /// Prompt tokens per second of the prompt's pass (`pp`).
    pub fn prefill_tokens_per_s(&self) -> f64 {
        self.prompt_tokens() as f64 / (self.ttft_ms() / 1e3)
    }

    /// Generated tokens per second at the median decode step (`tg`).
    pub fn decode_tokens_per_s(&self) -> Option<f64> {
        self.decode_ms().map(|ms| 1e3 / ms)
    }

    /// Every call's wall time, prefill first.
    pub fn total_ms(&self) -> f64 {
        self.prefill.wall_ms + self.decode.iter().map(|s| s.wall_ms).sum::<f64>()
    }
}

/// The median of `v` (the upper one of an even count), if any.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// Prompt lengths for a curve over 1..=`max`: 1, 2, 3, 4, 6, 8, 12, 16, …
/// (powers of two and the halfway points between them), then `max` itself —
/// dense where the cost bends, and a few dozen points even at 1,023.
pub fn curve_lengths(max: usize) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut p = 1;
    while p <= max {
        lengths.push(p);
        if p >= 2 && p + p / 2 <= max {
            lengths.push(p + p / 2);
        }
        p *= 2;
    }
    if lengths.last() != Some(&max) && max > 0 {
        lengths.push(max);
    }
    lengths
}

/// Whether step `n` of 1..=`n_max` is among the measured ones: every step
/// up to `dense`, then about `2 · dense` more evenly spaced, and the last —
/// for measurements whose cost grows with n (a step without the KV cache).
pub fn dense_then_spread(n: usize, n_max: usize, dense: usize) -> bool {
    let stride = n_max.saturating_sub(dense).div_ceil(dense * 2).max(1);
    n <= dense || (n - dense).is_multiple_of(stride) || n == n_max
}

/// `tokens` repeated to exactly `n` (a prompt of any length for timing:
/// what the tokens say does not change what a pass costs).
pub fn cycled(tokens: &[u32], n: usize) -> Vec<u32> {
    tokens.iter().copied().cycle().take(n).collect()
}

/// A polynomial fitted by least squares.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Coefficients, constant first: `y ≈ Σ coeffs[k] · x^k`.
    pub coeffs: Vec<f64>,
    /// Coefficient of determination: 1 − residual / total sum of squares.
    pub r2: f64,
}

impl Fit {
    /// The polynomial at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.coeffs.iter().rev().fold(0.0, |acc, c| acc * x + c)
    }
}

/// The degree-`degree` polynomial closest to `points` in squares; `None`
/// with fewer points than coefficients or when the x are too few distinct.
pub fn fit(points: &[(f64, f64)], degree: usize) -> Option<Fit> {
    let k = degree + 1;
    if points.len() < k {
        return None;
    }
    // x scaled into [-1, 1] so x⁴ at n = 1,024 does not swamp the constant.
    let scale = points.iter().map(|p| p.0.abs()).fold(0.0, f64::max).max(1e-300);
    // Normal equations: (XᵀX) c = Xᵀy, X[i][j] = (x_i / scale)^j.
    let mut a = vec![vec![0.0; k + 1]; k];
    for &(x, y) in points {
        let powers: Vec<f64> = (0..k).map(|j| (x / scale).powi(j as i32)).collect();
        for (row, &pr) in a.iter_mut().zip(&powers) {
            for (x, &pc) in row.iter_mut().zip(&powers) {
                *x += pr * pc;
            }
            row[k] += pr * y;
        }
    }
    let scaled = solve(a)?;
    let coeffs: Vec<f64> =
        scaled.iter().enumerate().map(|(j, c)| c / scale.powi(j as i32)).collect();
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let mut fitted = Fit { coeffs, r2: 0.0 };
    let residual: f64 = points.iter().map(|p| (p.1 - fitted.at(p.0)).powi(2)).sum();
    fitted.r2 = if total > 0.0 { 1.0 - residual / total } else { 1.0 };
    Some(fitted)
}

/// Gauss–Jordan elimination with partial pivoting on an augmented `k × (k+1)` matrix.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None; // too few distinct x for this degree
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (_, row) in a.iter_mut().enumerate().filter(|(r, _)| *r != col) {
            let f = row[col] / pivot_row[col];
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
        }
    }
    Some(a.iter().enumerate().map(|(r, row)| row[k] / row[r]).collect())
}

/// Bytes a KV cache holds: K and V, per layer, per KV head, per number of a
/// head, per token of context, per sequence.
pub fn kv_cache_bytes(
    layers: f64,
    kv_heads: f64,
    head_size: f64,
    bytes: f64,
    context: f64,
    batch: f64,
) -> f64 {
    2.0 * layers * kv_heads * head_size * bytes * context * batch
}

/// Token passes through the K and V projections (per layer) to generate
/// `new` tokens after a `context`-token prompt: with the cache the prompt
/// once and each new token once (`context + new − 1`: the last token is
/// never fed back); without it every step re-runs the whole sequence so far,
/// `Σ_{t=0}^{new−1} (context + t) = new · context + new · (new − 1) / 2`.
pub fn kv_projections(context: u64, new: u64) -> (u64, u64) {
    if new == 0 {
        return (0, 0);
    }
    (context + new - 1, new * context + new * (new - 1) / 2)
}

/// Running totals of a per-step cost measured at some steps only (`points`
/// sorted by n, each (n, ms)): every step in between is taken on the straight
/// line between its measured neighbours. Returns (n, total ms of steps 1..=n)
/// at each measured n; the steps before the first point count at its value.
pub fn cumulative(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    let mut total = 0.0;
    let mut prev: Option<(f64, f64)> = None;
    for &(n, ms) in points {
        total += match prev {
            // Steps prev.n + 1 ..= n: their sum under the line (trapezoid over whole steps).
            Some((pn, pms)) => {
                let steps = n - pn;
                steps * (pms + ms) / 2.0 + (ms - pms) / 2.0
            }
            None => n * ms,
        };
        out.push((n, total));
        prev = Some((n, ms));
    }
    out
}

/// A decode step's traffic against the device's read rate: the figure the
/// cost lessons and the bench show ("this step read 250.7 MB at 41.0 GB/s
/// — 62 % of what this GPU can read per second"). Decode reads every weight
/// once per token, so this share says how close an engine comes to the
/// limit the memory sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    /// Bytes the step must read: the weights it uses and its KV cache rows.
    pub bytes: f64,
    /// The step's time in milliseconds, and whether it is the device's own
    /// (GPU timestamp queries) rather than wall time.
    pub ms: f64,
    pub device_clock: bool,
    /// The device's measured read rate (`DeviceFigures::read_bytes_per_s`).
    pub read_bytes_per_s: f64,
}

impl Bandwidth {
    /// Bytes per second the step achieved.
    pub fn achieved(&self) -> f64 {
        self.bytes / (self.ms.max(1e-9) / 1e3)
    }

    /// The achieved rate as a share of the read rate (1 = the limit).
    pub fn share(&self) -> f64 {
        self.achieved() / self.read_bytes_per_s
    }

    /// The sentence, `device` naming what reads ("this GPU", "this CPU").
    pub fn sentence(&self, device: &str) -> String {
        let clock = if self.device_clock { "GPU time" } else { "wall time" };
        format!(
            "this step read {:.1} MB at {:.1} GB/s ({clock} {:.2} ms) — {:.0} % of what {device} can read per second ({:.1} GB/s, measured here)",
            self.bytes / 1e6,
            self.achieved() / 1e9,
            self.ms,
            100.0 * self.share(),
            self.read_bytes_per_s / 1e9
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(ms: f64, tokens: usize) -> StepStats {
        StepStats { tokens, wall_ms: ms, ..StepStats::default() }
    }

    #[test]
    fn a_timeline_gives_ttft_and_both_rates() {
        let t = Timeline {
            prefill: step(50.0, 100),
            decode: vec![step(4.0, 1), step(2.0, 1), step(3.0, 1), step(9.0, 1)],
        };
        assert_eq!(t.ttft_ms(), 50.0);
        assert_eq!(t.prefill_tokens_per_s(), 2000.0);
        assert_eq!(t.decode_ms(), Some(4.0)); // upper median of 2, 3, 4, 9
        assert_eq!(t.decode_tokens_per_s(), Some(250.0));
        assert_eq!(t.total_ms(), 68.0);
        assert_eq!(Timeline { prefill: step(1.0, 1), decode: vec![] }.decode_ms(), None);
    }

    #[test]
    fn curve_lengths_are_dense_low_and_end_at_the_maximum() {
        assert_eq!(curve_lengths(1), vec![1]);
        assert_eq!(curve_lengths(5), vec![1, 2, 3, 4, 5]);
        assert_eq!(
            curve_lengths(255),
            vec![1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 255]
        );
        assert_eq!(*curve_lengths(1023).last().unwrap(), 1023);
        assert!(curve_lengths(1023).len() < 25);
        assert!(curve_lengths(0).is_empty());
    }

    #[test]
    fn dense_then_spread_ends_at_the_last_step() {
        let at =
            |n_max| (1..=n_max).filter(|&n| dense_then_spread(n, n_max, 16)).collect::<Vec<_>>();
        assert_eq!(at(5), vec![1, 2, 3, 4, 5]);
        assert_eq!(at(24).len(), 24);
        let full = at(255);
        assert_eq!(full[..16], (1..=16).collect::<Vec<_>>()[..]);
        assert_eq!(*full.last().unwrap(), 255);
        assert!(full.len() <= 16 + 2 * 16 + 1, "{}", full.len());
        assert!(full.len() >= 16 + 2 * 16 - 8, "{}", full.len());
    }

    #[test]
    fn cycled_repeats_to_the_length() {
        assert_eq!(cycled(&[7, 8, 9], 7), vec![7, 8, 9, 7, 8, 9, 7]);
        assert_eq!(cycled(&[7, 8, 9], 2), vec![7, 8]);
    }

    #[test]
    fn fit_recovers_a_quadratic_exactly_and_reports_r2() {
        let points: Vec<(f64, f64)> = (1..=1023)
            .step_by(31)
            .map(|n| (n as f64, 3.0 + 0.5 * n as f64 + 2e-4 * (n * n) as f64))
            .collect();
        let f = fit(&points, 2).unwrap();
        for (got, want) in f.coeffs.iter().zip([3.0, 0.5, 2e-4]) {
            assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{got} vs {want}");
        }
        assert!((f.r2 - 1.0).abs() < 1e-12);
        // A line through noisy points: R² below 1, slope near the truth.
        let noisy: Vec<(f64, f64)> = (0..40)
            .map(|i| (i as f64, 2.0 * i as f64 + if i % 2 == 0 { 3.0 } else { -3.0 }))
            .collect();
        let line = fit(&noisy, 1).unwrap();
        assert!((line.coeffs[1] - 2.0).abs() < 0.05, "{:?}", line.coeffs);
        assert!(line.r2 > 0.9 && line.r2 < 1.0, "{}", line.r2);
    }

    #[test]
    fn fit_refuses_too_few_points_or_distinct_x() {
        assert_eq!(fit(&[(1.0, 1.0), (2.0, 2.0)], 2), None);
        assert_eq!(fit(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)], 1), None);
        assert_eq!(fit(&[], 0), None);
        // A constant fit of a constant: R² is 1 by convention (nothing to explain).
        assert_eq!(fit(&[(1.0, 5.0), (2.0, 5.0)], 0).unwrap().r2, 1.0);
    }

    #[test]
    fn the_kv_calculator_prices_the_lessons_models() {
        let gb = |b: f64| b / 1e9;
        // Llama-2-7B, f16, 4,096 tokens: 2 · 32 · 32 · 128 · 2 · 4096 = 2.15 GB.
        assert!((gb(kv_cache_bytes(32.0, 32.0, 128.0, 2.0, 4096.0, 1.0)) - 2.147).abs() < 1e-3);
        // A 70B model with GQA (80 layers, 8 KV heads) at 128K: tens of gigabytes.
        assert!((gb(kv_cache_bytes(80.0, 8.0, 128.0, 2.0, 131072.0, 1.0)) - 42.95).abs() < 0.01);
        // GPT-2 124M in f32 at 1,024: 75.5 MB.
        assert_eq!(kv_cache_bytes(12.0, 12.0, 64.0, 4.0, 1024.0, 1.0), 75_497_472.0);
    }

    #[test]
    fn projections_with_and_without_the_cache() {
        assert_eq!(kv_projections(1000, 500), (1499, 624_750));
        assert_eq!(kv_projections(100, 1), (100, 100)); // one token: the same pass
        assert_eq!(kv_projections(5, 0), (0, 0));
        // Brute force: without the cache step t runs context + t tokens.
        let (l, t) = (37u64, 11u64);
        assert_eq!(kv_projections(l, t).1, (0..t).map(|s| l + s).sum::<u64>());
    }

    #[test]
    fn cumulative_sums_every_step_and_interpolates_between_points() {
        // Measured at every step: plain running sums.
        assert_eq!(
            cumulative(&[(1.0, 2.0), (2.0, 3.0), (3.0, 5.0)]),
            vec![(1.0, 2.0), (2.0, 5.0), (3.0, 10.0)]
        );
        // A line measured at n = 1 and 5: steps 2..=5 are 3, 4, 5, 6 (sum 18) after step 1's 2.
        let line = cumulative(&[(1.0, 2.0), (5.0, 6.0)]);
        assert_eq!(line, vec![(1.0, 2.0), (5.0, 20.0)]);
        assert!(cumulative(&[]).is_empty());
    }

    #[test]
    fn bandwidth_is_the_bytes_over_the_time_against_the_read_rate() {
        let b = Bandwidth { bytes: 250e6, ms: 10.0, device_clock: true, read_bytes_per_s: 50e9 };
        assert_eq!(b.achieved(), 25e9);
        assert_eq!(b.share(), 0.5);
        assert_eq!(
            b.sentence("this GPU"),
            "this step read 250.0 MB at 25.0 GB/s (GPU time 10.00 ms) — 50 % of what this GPU can read per second (50.0 GB/s, measured here)"
        );
    }
}

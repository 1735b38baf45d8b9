//! A replay's figures, per scheduler: throughput, time to first token and
//! end-to-end latency per request (mean, p50, p95; in steps and in wall
//! milliseconds from its arrival), and slot utilisation (cells that decoded
//! or prefilled, of all slot-steps), with the static scheduler's wasted ones.

use super::run::{Cell, Replay};
use super::trace::Request;

/// Mean, median and 95th percentile (nearest rank) of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Spread { mean: v.iter().sum::<f64>() / v.len() as f64, p50: rank(0.5), p95: rank(0.95) }
    }
}

/// What a scheduler achieved on a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    pub tokens: usize,
    pub steps: usize,
    pub tokens_per_s: f64,
    /// Steps from arrival to the first token, and to the end.
    pub ttft_steps: Spread,
    pub e2e_steps: Spread,
    /// Milliseconds from the start of the arrival step to the first token and the end.
    pub ttft_ms: Spread,
    pub e2e_ms: Spread,
    /// Share of slot-steps that prefilled or decoded.
    pub utilisation: f64,
    /// Slot-steps a static batch held for a request already finished.
    pub wasted: usize,
}

pub fn figures(trace: &[Request], replay: &Replay) -> Figures {
    let served = || trace.iter().zip(&replay.served);
    let steps_from_arrival = |pick: fn(&super::run::Served) -> Option<usize>| -> Vec<f64> {
        served().filter_map(|(r, s)| Some((pick(s)? + 1 - r.arrival) as f64)).collect()
    };
    // From the start of the step it arrived in (a request arrives at a step).
    let ms = |pick: fn(&super::run::Served) -> Option<f64>| -> Vec<f64> {
        let arrived = |r: &Request| replay.step_ms.get(r.arrival).copied().unwrap_or(0.0);
        served().filter_map(|(r, s)| Some(pick(s)? - arrived(r))).collect()
    };
    let cells = replay.cells.iter().flatten();
    let busy = cells.clone().filter(|c| matches!(c, Cell::Prefill(_) | Cell::Decode(_))).count();
    let all = cells.clone().count();
    let tokens = replay.served.iter().map(|s| s.tokens.len()).sum();
    Figures {
        tokens,
        steps: replay.cells.len(),
        tokens_per_s: tokens as f64 / (replay.wall_ms / 1e3).max(1e-9),
        ttft_steps: Spread::of(&steps_from_arrival(|s| s.first_token)),
        e2e_steps: Spread::of(&steps_from_arrival(|s| s.ended)),
        ttft_ms: Spread::of(&ms(|s| s.first_token_ms)),
        e2e_ms: Spread::of(&ms(|s| s.ended_ms)),
        utilisation: busy as f64 / all.max(1) as f64,
        wasted: cells.filter(|c| **c == Cell::Wasted).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn spreads_take_the_nearest_rank() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.mean, s.p50, s.p95), (3.0, 3.0, 5.0));
        assert_eq!(Spread::of(&[]), Spread::default());
    }
}

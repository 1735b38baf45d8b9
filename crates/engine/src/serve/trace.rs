//! An arrival trace (issue 35): requests, each with the step it arrives at,
//! its prompt, how many tokens it may generate and its seed — drawn from a
//! seeded Poisson process (`rate` arrivals per decode step on average) or
//! read from text, one request a line: `step prompt_index max_tokens seed`.
//! The schedulers replay the same trace, so their figures compare.

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::{EngineError, Result};

/// One request of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The decode step it arrives at (0: before the first).
    pub arrival: usize,
    /// Which prompt of the trace's list it sends.
    pub prompt: usize,
    pub max_tokens: usize,
    pub seed: u64,
}

/// `n` requests arriving as a Poisson process of `rate` per step (the gaps
/// exponential, rounded down to whole steps), prompts taken in turn from
/// `n_prompts`, each asking a length drawn uniformly from ⌈max_tokens / 4⌉
/// to `max_tokens` (served requests differ in length: what a static batch
/// wastes and continuous batching reclaims); request i's seed is `seed + i`.
pub fn poisson(
    n: usize,
    rate: f64,
    n_prompts: usize,
    max_tokens: usize,
    seed: u64,
) -> Result<Vec<Request>> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(EngineError::Setting(format!("--rate {rate}: give arrivals per step above 0")));
    }
    if n_prompts == 0 || max_tokens == 0 {
        return Err(EngineError::Setting(
            "a trace needs prompts and at least one token each".into(),
        ));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut t = 0.0f64;
    let requests = (0..n).map(|i| {
        // u in (0, 1]: −ln u / rate is an exponential gap.
        let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        t += -libm::log(u) / rate;
        let shortest = max_tokens.div_ceil(4);
        let span = (max_tokens - shortest + 1) as u64;
        let length = shortest + (rng.next_u64() % span) as usize;
        Request {
            arrival: t as usize,
            prompt: i % n_prompts,
            max_tokens: length,
            seed: seed + i as u64,
        }
    });
    Ok(requests.collect())
}

/// A typed trace: one request a line, `step prompt_index max_tokens seed`
/// (blank lines and `#` comments skipped), arrivals in order.
pub fn parse(text: &str, n_prompts: usize) -> Result<Vec<Request>> {
    let mut out: Vec<Request> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad =
            |why: &str| EngineError::Setting(format!("trace line {}: {why}: {line:?}", i + 1));
        let fields: Vec<u64> = line
            .split_whitespace()
            .map(|f| f.parse::<u64>().map_err(|_| bad("not a whole number")))
            .collect::<Result<_>>()?;
        let [arrival, prompt, max_tokens, seed] = fields[..] else {
            return Err(bad("four numbers: step prompt_index max_tokens seed"));
        };
        let request = Request {
            arrival: arrival as usize,
            prompt: prompt as usize,
            max_tokens: max_tokens as usize,
            seed,
        };
        if request.prompt >= n_prompts {
            return Err(bad(&format!("there are {n_prompts} prompts")));
        }
        if request.max_tokens == 0 {
            return Err(bad("a request asks at least one token"));
        }
        if out.last().is_some_and(|r| r.arrival > request.arrival) {
            return Err(bad("arrivals go in order"));
        }
        out.push(request);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_arrivals_average_the_rate_and_repeat_with_the_seed() {
        let trace = poisson(20_000, 0.5, 3, 8, 9).unwrap();
        assert_eq!(trace, poisson(20_000, 0.5, 3, 8, 9).unwrap());
        let span = trace.last().unwrap().arrival as f64;
        let rate = trace.len() as f64 / span;
        assert!((rate - 0.5).abs() < 0.02, "measured {rate} arrivals a step");
        assert!(trace.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert_eq!((trace[4].prompt, trace[4].seed), (1, 13));
        assert!(poisson(3, 0.0, 3, 8, 1).is_err());
        // Lengths cover ⌈8 / 4⌉ = 2 … 8, each about equally often.
        for length in 2..=8 {
            let n = trace.iter().filter(|r| r.max_tokens == length).count() as f64;
            assert!((n / trace.len() as f64 - 1.0 / 7.0).abs() < 0.01, "length {length}: {n}");
        }
        assert!(poisson(50, 1.0, 1, 1, 2).unwrap().iter().all(|r| r.max_tokens == 1));
    }

    #[test]
    fn a_typed_trace_is_read_and_bad_lines_are_named() {
        let text = "# step prompt max seed\n0 0 8 1\n\n3 2 4 7  # late\n";
        let trace = parse(text, 3).unwrap();
        assert_eq!(trace[1], Request { arrival: 3, prompt: 2, max_tokens: 4, seed: 7 });
        for (bad, why) in [
            ("0 0 8", "four numbers"),
            ("0 5 8 1", "3 prompts"),
            ("2 0 1 1\n1 0 1 1", "in order"),
            ("0 0 0 1", "at least one"),
            ("x 0 1 1", "whole number"),
        ] {
            let e = parse(bad, 3).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}

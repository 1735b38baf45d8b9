//! Ranking finished hypotheses: `cumulative / length^penalty`, as Hugging
//! Face scores them. Kept apart from the search so a page can re-rank what a
//! search finished under another penalty without running the model again.

/// How a hypothesis's length is counted for the penalty.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scoring {
    /// The exponent: 1 averages log-probability per token, 0 ranks by the
    /// sum (favours short hypotheses), above 1 favours long ones.
    pub length_penalty: f64,
    /// Whether the prompt's tokens count in the length (Hugging Face before
    /// v4.36 counted them; it now counts only the new tokens).
    pub prompt_in_length: bool,
}

impl Scoring {
    /// Hugging Face's default: penalty 1, new tokens only.
    pub const DEFAULT: Scoring = Scoring { length_penalty: 1.0, prompt_in_length: false };

    /// The score of `generated` new tokens (an end token included) with
    /// summed log-probability `cumulative` after a prompt of `prompt_len`.
    pub fn score(self, cumulative: f64, generated: usize, prompt_len: usize) -> f64 {
        cumulative
            / libm::pow(self.length(generated, prompt_len).max(1) as f64, self.length_penalty)
    }

    /// The length the penalty divides by: the new tokens, plus the prompt's
    /// when they count.
    pub fn length(self, generated: usize, prompt_len: usize) -> usize {
        generated + if self.prompt_in_length { prompt_len } else { 0 }
    }
}

/// A hypothesis the search finished: it ended on an end token, or was live
/// when the search stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypothesis {
    /// The new tokens (the end token last, when it ended on one).
    pub tokens: Vec<u32>,
    /// Sum of their natural-log probabilities.
    pub logprob: f64,
    /// Its last candidate in the history: (step, rank).
    pub node: (usize, usize),
    /// Whether it ended on an end token (else the search stopped with it live).
    pub ended: bool,
}

/// Indices into `hypotheses` with their scores, best first (ties: the one
/// found first).
pub fn ranked(hypotheses: &[Hypothesis], scoring: Scoring, prompt_len: usize) -> Vec<(usize, f64)> {
    let mut order: Vec<(usize, f64)> = hypotheses
        .iter()
        .enumerate()
        .map(|(i, h)| (i, scoring.score(h.logprob, h.tokens.len(), prompt_len)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hyp(len: usize, logprob: f64) -> Hypothesis {
        Hypothesis { tokens: vec![0; len], logprob, node: (len - 1, 0), ended: true }
    }

    #[test]
    fn the_penalty_moves_the_balance_between_short_and_long() {
        let h = [hyp(2, -2.0), hyp(8, -4.0)];
        let by = |length_penalty, prompt_in_length| {
            ranked(&h, Scoring { length_penalty, prompt_in_length }, 10)[0].0
        };
        assert_eq!(by(0.0, false), 0, "penalty 0: the sum, the short one wins");
        assert_eq!(by(1.0, false), 1, "penalty 1: per token, -0.5 beats -1");
        // With a 10-token prompt in the length: -2/12 = -0.167 beats -4/18 = -0.222.
        assert_eq!(by(1.0, true), 0);
        let s = Scoring { length_penalty: 2.0, prompt_in_length: false }.score(-4.0, 8, 10);
        assert!((s - -4.0 / 64.0).abs() < 1e-15);
    }
}

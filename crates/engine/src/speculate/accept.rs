//! Leviathan et al.'s accept-or-resample rule (2023, "Fast Inference from
//! Transformers via Speculative Decoding", Algorithm 1), for one drafted
//! token: drafted from the draft's distribution `q`, it stays with
//! probability min(1, p(d) / q(d)) under the target's `p`; otherwise the
//! target's token is drawn from the residual norm(max(0, p − q)). The token
//! this emits is distributed exactly as `p` (tested with a χ² test).
//! Greedy decoding is the case where both are one-hot: the drafted token
//! stays exactly when it is the target's own choice.

/// What the rule does with a drafted token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Rejected: the target's token in its place.
    Reject(u32),
}

/// The verdict on `drafted` (drawn from `q`) under the target's `p`, with
/// `u` uniform in [0, 1) for the test and `u2` for the resample.
pub fn verdict(p: &[f64], q: &[f64], drafted: u32, u: f64, u2: f64) -> Verdict {
    let (pd, qd) = (p[drafted as usize], q[drafted as usize]);
    // u < p/q, written without dividing (q(d) > 0: the draft drew d).
    if u * qd < pd {
        return Verdict::Accept;
    }
    Verdict::Reject(residual(p, q, u2))
}

/// A draw from norm(max(0, p − q)) by inverse CDF in id order (from `p`
/// itself when p ≤ q everywhere, which happens only when they are equal).
pub fn residual(p: &[f64], q: &[f64], u: f64) -> u32 {
    let excess = |i: usize| (p[i] - q[i]).max(0.0);
    let total: f64 = (0..p.len()).map(excess).sum();
    if total <= 0.0 {
        return inverse_cdf(p.iter().copied(), 1.0, u);
    }
    inverse_cdf((0..p.len()).map(excess), total, u)
}

/// The first id where the running sum of `weights` passes `u · total`
/// (the last with weight where rounding leaves it short).
pub fn inverse_cdf(weights: impl Iterator<Item = f64> + Clone, total: f64, u: f64) -> u32 {
    let target = u * total;
    let mut cum = 0.0;
    let mut last = 0;
    for (i, w) in weights.enumerate() {
        if w > 0.0 {
            cum += w;
            last = i;
            if target < cum {
                return i as u32;
            }
        }
    }
    last as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_keeps_the_targets_choice_and_corrects_the_rest() {
        let p = [0.0, 1.0, 0.0];
        let q_same = [0.0, 1.0, 0.0];
        let q_other = [0.0, 0.0, 1.0];
        for u in [0.0, 0.5, 0.999] {
            assert_eq!(verdict(&p, &q_same, 1, u, u), Verdict::Accept);
            assert_eq!(verdict(&p, &q_other, 2, u, u), Verdict::Reject(1));
        }
    }

    #[test]
    fn the_residual_is_where_the_target_exceeds_the_draft() {
        let p = [0.5, 0.3, 0.2];
        let q = [0.7, 0.1, 0.2];
        // Only token 1 has p > q: every resample gives it.
        for u in [0.0, 0.4, 0.99] {
            assert_eq!(residual(&p, &q, u), 1);
        }
        // Token 0 drafted at q = 0.7 stays when u < 0.5 / 0.7.
        assert_eq!(verdict(&p, &q, 0, 0.71, 0.0), Verdict::Accept);
        assert_eq!(verdict(&p, &q, 0, 0.72, 0.0), Verdict::Reject(1));
    }
}

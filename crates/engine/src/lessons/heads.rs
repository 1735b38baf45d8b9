//! What an attention head does, in numbers, from its weights `(n, n_cols)`
//! (row i: query at position `pos0 + i`, over keys 0 ..= pos0 + i): how
//! spread out it looks (entropy), how far back, how much on the first token
//! (the "attention sink") and on the previous one — and the label a student
//! would give it. Also the "hide the first token" view: a row without key 0,
//! renormalised.

/// Averages over a head's query rows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeadStats {
    /// Mean entropy of a row, in bits.
    pub entropy_bits: f64,
    /// Mean over rows of Σ_j w_ij · (query position − j): how far back it looks.
    pub look_back: f64,
    /// Mean weight on key 0.
    pub first: f64,
    /// Mean weight on the key just before the query (rows that have one).
    pub previous: f64,
    /// Mean weight on the query's own key.
    pub itself: f64,
}

/// The stats of one head's `weights` (`n` rows of `n_cols`), queries from `pos0`.
pub fn head_stats(weights: &[f32], n_cols: usize, pos0: usize) -> HeadStats {
    let rows = weights.len() / n_cols.max(1);
    if rows == 0 {
        return HeadStats::default();
    }
    let mut s = HeadStats::default();
    let mut with_previous = 0usize;
    for (i, row) in weights.chunks_exact(n_cols).enumerate() {
        let q = pos0 + i;
        let seen = &row[..=q];
        s.entropy_bits -= seen
            .iter()
            .filter(|&&w| w > 0.0)
            .map(|&w| w as f64 * libm::log2(w as f64))
            .sum::<f64>();
        s.look_back +=
            seen.iter().enumerate().map(|(j, &w)| w as f64 * (q - j) as f64).sum::<f64>();
        s.first += seen[0] as f64;
        s.itself += seen[q] as f64;
        if q > 0 {
            s.previous += seen[q - 1] as f64;
            with_previous += 1;
        }
    }
    let n = rows as f64;
    s.entropy_bits /= n;
    s.look_back /= n;
    s.first /= n;
    s.itself /= n;
    s.previous /= with_previous.max(1) as f64;
    s
}

/// What a head mostly does, when one thing stands out (over half its weight
/// on average), else `None`.
pub fn label(s: &HeadStats) -> Option<&'static str> {
    let labels =
        [(s.previous, "previous-token head"), (s.first, "sink head"), (s.itself, "self head")];
    labels.into_iter().filter(|(w, _)| *w > 0.5).max_by(|a, b| a.0.total_cmp(&b.0)).map(|x| x.1)
}

/// `row` (over keys 0 ..= q and zeros after) without key 0, renormalised:
/// where the head looks once the attention sink is set aside. A row whose
/// only key is the first stays as it is.
pub fn without_first(row: &[f32], q: usize) -> Vec<f32> {
    let rest: f32 = row[1..=q.min(row.len() - 1)].iter().sum();
    if q == 0 || rest <= 0.0 {
        return row.to_vec();
    }
    let mut out: Vec<f32> = row.iter().map(|w| w / rest).collect();
    out[0] = 0.0;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_previous_token_head_and_a_sink_head_are_told_apart() {
        // 4 queries at positions 0..4.
        let n = 4;
        let mut prev = vec![0.0; n * n];
        let mut sink = vec![0.0; n * n];
        for i in 0..n {
            prev[i * n + i.saturating_sub(1)] = 1.0;
            sink[i * n] = 1.0;
        }
        let p = head_stats(&prev, n, 0);
        assert_eq!(p.previous, 1.0);
        assert_eq!(label(&p), Some("previous-token head"));
        assert!((p.look_back - 0.75).abs() < 1e-12); // (0 + 1 + 1 + 1) / 4
        assert_eq!(p.entropy_bits, 0.0);
        let s = head_stats(&sink, n, 0);
        assert_eq!(s.first, 1.0);
        assert_eq!(label(&s), Some("sink head"));
        assert!((s.look_back - 1.5).abs() < 1e-12); // (0 + 1 + 2 + 3) / 4
    }

    #[test]
    fn a_uniform_head_has_log2_keys_bits_and_no_label() {
        // One query at position 3 over 4 keys, uniform: 2 bits.
        let s = head_stats(&[0.25, 0.25, 0.25, 0.25], 4, 3);
        assert!((s.entropy_bits - 2.0).abs() < 1e-9);
        assert_eq!(label(&s), None);
        assert!((s.look_back - 1.5).abs() < 1e-9);
    }

    #[test]
    fn hiding_the_first_token_renormalises_the_rest() {
        let row = [0.6, 0.1, 0.3, 0.0];
        let r = without_first(&row, 2);
        assert_eq!(r[0], 0.0);
        assert!((r[1] - 0.25).abs() < 1e-6 && (r[2] - 0.75).abs() < 1e-6 && r[3] == 0.0);
        // The first query has only key 0: nothing to renormalise.
        assert_eq!(without_first(&[1.0, 0.0], 0), vec![1.0, 0.0]);
    }
}

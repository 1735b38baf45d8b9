//! The logit lens: what the model would predict if it stopped after a block
//! — a residual-stream row through the final norm and the LM head, the
//! same CPU twins the last block's output goes through, so the lens of the
//! last block is the model's own logits.

use crate::family::norm;
use crate::model::Model;

/// Logits `(rows, vocab_size)` of residual rows `(rows, n_embd)`.
pub fn logits(model: &Model, residual: &[f32]) -> Vec<f32> {
    let c = &model.config;
    let w = &model.weights;
    let rows = residual.len() / c.n_embd;
    let mut xb = vec![0.0; residual.len()]; // (rows, n_embd) after the final norm
    norm(c, &w.ln_f_weight, &w.ln_f_bias, residual, &mut xb);
    let mut out = vec![0.0; rows * c.vocab_size]; // (rows, vocab_size)
    crate::fast::lm_head::run(&xb, w.lm_head(), 0, c.vocab_size, 0, rows, &mut out);
    out
}

/// The `k` most likely tokens of `logits` with their probabilities, most
/// likely first, the lower id first on ties (as [`crate::sample::argmax`]).
pub fn top(logits: &[f32], k: usize) -> Vec<(u32, f64)> {
    let logp = crate::sample::log_softmax(logits);
    let mut ids: Vec<u32> = (0..logits.len() as u32).collect();
    let by_p = |a: &u32, b: &u32| logp[*b as usize].total_cmp(&logp[*a as usize]).then(a.cmp(b));
    let k = k.min(ids.len());
    if k < ids.len() && k > 0 {
        ids.select_nth_unstable_by(k - 1, by_p);
    }
    ids.truncate(k);
    ids.sort_by(by_p);
    ids.into_iter().map(|id| (id, libm::exp(logp[id as usize]))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::argmax;

    #[test]
    fn top_gives_the_softmax_of_the_most_likely_in_order() {
        let logits = [1.0, 3.0, 2.0, 3.0, -1.0];
        let t = top(&logits, 3);
        assert_eq!(t.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3, 2]);
        let z: f64 = logits.iter().map(|&v| (v as f64).exp()).sum();
        assert!((t[0].1 - 3f64.exp() / z).abs() < 1e-12);
        assert!((t[2].1 - 2f64.exp() / z).abs() < 1e-12);
        assert_eq!(t[0].0, argmax(&logits));
        assert_eq!(top(&logits, 10).len(), 5);
        assert!(top(&logits, 0).is_empty());
        let all: f64 = top(&logits, 5).iter().map(|x| x.1).sum();
        assert!((all - 1.0).abs() < 1e-12);
    }
}

//! The logit lens: what the model would predict if it stopped after a block
//! — a residual-stream row through the final LayerNorm and the LM head, the
//! same CPU twins the last block's output goes through, so the lens of the
//! last block is the model's own logits.

use crate::kernels::{layernorm, lm_head};
use crate::model::Model;

/// Logits `(rows, vocab_size)` of residual rows `(rows, n_embd)`.
pub fn logits(model: &Model, residual: &[f32]) -> Vec<f32> {
    let c = &model.config;
    let w = &model.weights;
    let rows = residual.len() / c.n_embd;
    let mut xb = vec![0.0; residual.len()]; // (rows, n_embd) after ln_f
    layernorm::run_cpu(residual, &w.ln_f_weight, &w.ln_f_bias, c.layer_norm_epsilon, &mut xb);
    let mut out = vec![0.0; rows * c.vocab_size]; // (rows, vocab_size)
    lm_head::run_cpu(&xb, w.lm_head(), 0, c.vocab_size, 0, rows, &mut out);
    out
}

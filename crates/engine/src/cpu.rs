//! The CPU reference engine: the forward pass written as calls to each
//! kernel's CPU twin, in data-flow order. It is what the GPU engine is tested
//! against and what the browser runs when WebGPU is absent, so it uses no
//! threads and no file system.

use crate::error::{EngineError, Result};
use crate::kernels::{
    attention, embedding, gelu, kv_write, layernorm, lm_head, matmul, residual_add,
};
use crate::model::Config;
use crate::step::{check_input, SharedModel, StepStats, Wanted};

/// A CPU session: the model plus its own KV cache.
#[derive(Clone)]
pub struct CpuSession {
    model: SharedModel,
    key_cache: Vec<Vec<f32>>,   // (n_layer) × (n_positions, n_embd)
    value_cache: Vec<Vec<f32>>, // (n_layer) × (n_positions, n_embd)
    pos: usize,
    last: StepStats,
}

impl CpuSession {
    /// An empty session (position 0).
    pub fn new(model: SharedModel) -> CpuSession {
        let c = &model.config;
        let cache = vec![vec![0.0; c.n_positions * c.n_embd]; c.n_layer];
        CpuSession {
            key_cache: cache.clone(),
            value_cache: cache,
            model,
            pos: 0,
            last: StepStats::default(),
        }
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.model.config
    }

    /// Tokens in the cache.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Cost of the last forward call.
    pub fn last_stats(&self) -> StepStats {
        self.last
    }

    /// Forgets everything from position `to` on.
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        if to > self.pos {
            return Err(EngineError::Rewind { to, pos: self.pos });
        }
        self.pos = to;
        Ok(())
    }

    /// Runs `tokens` at positions `pos..`, appending their k and v to the cache.
    pub fn forward(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        check_input(&self.model, self.pos, tokens)?;
        let logits = self.run(tokens, wanted);
        self.pos += tokens.len();
        self.last = StepStats {
            tokens: tokens.len(),
            wall_ms: start.elapsed().as_secs_f64() * 1e3,
            ..StepStats::default()
        };
        Ok(logits)
    }

    fn run(&mut self, tokens: &[u32], wanted: Wanted) -> Vec<f32> {
        let (model, c) = (&self.model, &self.model.config);
        let (n, e) = (tokens.len(), c.n_embd);
        let w = &model.weights;
        let mut x = vec![0.0; n * e]; // (n, n_embd) residual stream
        let mut xb = vec![0.0; n * e]; // (n, n_embd) layernorm output
        let mut qkv = vec![0.0; n * 3 * e]; // (n, 3 * n_embd)
        let mut y = vec![0.0; n * e]; // (n, n_embd) attention output
        let mut proj = vec![0.0; n * e]; // (n, n_embd) block output
        let mut fc = vec![0.0; n * c.n_inner]; // (n, n_inner)
        embedding::run_cpu(tokens, &w.wte, &w.wpe, self.pos, e, &mut x);
        for (l, lw) in w.layers.iter().enumerate() {
            layernorm::run_cpu(&x, &lw.ln_1_weight, &lw.ln_1_bias, c.layer_norm_epsilon, &mut xb);
            matmul::run_cpu(&xb, &lw.c_attn_weight, &lw.c_attn_bias, &mut qkv);
            let (kc, vc) = (&mut self.key_cache[l], &mut self.value_cache[l]);
            kv_write::run_cpu(&qkv, e, self.pos, kc, vc);
            let scale = c.attn_scale(l);
            attention::run_cpu(&qkv, kc, vc, e, c.head_size, self.pos, scale, &mut y);
            matmul::run_cpu(&y, &lw.attn_proj_weight, &lw.attn_proj_bias, &mut proj);
            residual_add::run_cpu(&proj, &mut x);
            layernorm::run_cpu(&x, &lw.ln_2_weight, &lw.ln_2_bias, c.layer_norm_epsilon, &mut xb);
            matmul::run_cpu(&xb, &lw.c_fc_weight, &lw.c_fc_bias, &mut fc);
            gelu::run_cpu(&mut fc);
            matmul::run_cpu(&fc, &lw.mlp_proj_weight, &lw.mlp_proj_bias, &mut proj);
            residual_add::run_cpu(&proj, &mut x);
        }
        layernorm::run_cpu(&x, &w.ln_f_weight, &w.ln_f_bias, c.layer_norm_epsilon, &mut xb);
        let (row0, n_out) = match wanted {
            Wanted::Last => (n - 1, 1),
            Wanted::All => (0, n),
        };
        let mut logits = vec![0.0; n_out * c.vocab_size]; // (n_out, vocab_size)
        lm_head::run_cpu(&xb, w.lm_head(), row0, n_out, e, &mut logits);
        logits
    }
}

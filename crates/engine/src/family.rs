//! The steps where model families differ, as the CPU engine runs them: the
//! norm (GPT-2's LayerNorm, the Llama family's RMSNorm). Rotary positions
//! and the SwiGLU activation are the Llama family's alone: their CPU twins
//! are `kernels::rope` and `kernels::swiglu`.

use crate::kernels::{layernorm, rms_norm};
use crate::model::{Config, Family};

/// The family's norm of each row of `x` into `out`: GPT-2's LayerNorm
/// (`bias` its shift), the Llama family's RMSNorm (no shift).
pub fn norm(c: &Config, weight: &[f32], bias: &[f32], x: &[f32], out: &mut [f32]) {
    match c.family {
        Family::Gpt2 => layernorm::run_cpu(x, weight, bias, c.layer_norm_epsilon, out),
        Family::Llama(_) => rms_norm::run_cpu(x, weight, c.layer_norm_epsilon, out),
    }
}

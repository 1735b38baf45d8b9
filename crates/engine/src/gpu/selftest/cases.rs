//! The kernel checks: every WGSL kernel on seeded inputs at awkward sizes (1,
//! 63, 64, 65, 1757, odd model dims), with the CPU twin's answer and the
//! tolerance it must meet. One table, run by the native tests
//! (`tests/kernels.rs`, on lavapipe) and by the page's `?selftest=1` (on the
//! visitor's adapter). Outputs start as NaN, so an element a kernel fails to
//! write fails the check. Tolerances, per op:
//! - embedding, kv_write, residual_add: exact (copies and a single f32 add are
//!   correctly rounded on both sides);
//! - gelu: 1e-6 abs + 1e-5 rel (the driver's tanh is not the CPU's);
//! - layernorm: 1e-5 abs + 1e-5 rel (tree vs sequential reductions);
//! - matmul, matvec_residual, lm_head: K·ε abs + 1e-5 rel for inputs in
//!   [-1, 1]: the worst-case rounding gap between two summation orders of K
//!   products;
//! - ln_qkv, ln_fc_gelu: see `fused` (the LayerNorm's rounding scaled up by the dot);
//! - rms_qkv, rms_swiglu: see `family_fused` (as ln_qkv's, through a turn or the gate);
//! - rms_norm: 1e-5 abs + 1e-5 rel (tree vs sequential reductions, as layernorm);
//! - rope: 1e-6 abs + 1e-6 rel (the same turns; a GPU may fuse a product and
//!   a sum into one rounding);
//! - swiglu: 1e-6 abs + 1e-5 rel (the driver's exp is not the CPU's);
//! - attention: 1e-5 abs + 1e-4 rel (online vs two-pass softmax).
//! - attention_probs: 1e-6 abs + 1e-4 rel (weights in [0, 1]; the GPU pre-scales q).
//!
//! The kernels that read weights (embedding, matmul, the fused decode kernels, lm_head) run once
//! per weight [`Format`]: the twin computes on the same packed [`Matrix`], so
//! the tolerances are the f32 ones, except that the embedding in a scaled
//! format (int8, int4) allows an f32 ulp or two: `q · scale + wpe` may be
//! fused into one multiply-add on a GPU and rounded once instead of twice.

pub use super::inputs::{config, launch, random, Case, Tolerance};
use super::{attention, family, family_fused, fused, mass, prefill, rows, split};
use crate::kernels::{Kernel, Split};
use crate::storage::format::Format;

/// Every case of `kernel` (in every weight format, for the kernels that
/// read weights); the split kernels' laid out as `split` says.
pub fn cases(kernel: Kernel, split: Split) -> Vec<Case> {
    let formats: &[Format] = if kernel.reads_weights() { &Format::ALL } else { &[Format::F32] };
    formats.iter().flat_map(|&format| cases_in(kernel, format, split)).collect()
}

/// The cases of `kernel` with weights in `format`.
fn cases_in(kernel: Kernel, format: Format, split: Split) -> Vec<Case> {
    match kernel {
        Kernel::Embedding if format == Format::F32 => {
            prefill::embedding_cases(format).into_iter().chain(rows::embedding_cases()).collect()
        }
        Kernel::Embedding => prefill::embedding_cases(format),
        Kernel::Layernorm => prefill::layernorm_cases(),
        Kernel::Matmul => prefill::matmul_cases(format, Kernel::Matmul, split),
        Kernel::MatmulTiled => prefill::matmul_cases(format, Kernel::MatmulTiled, split),
        Kernel::MatmulSplit => prefill::matmul_cases(format, Kernel::MatmulSplit, split),
        Kernel::LnQkv => fused::ln_qkv_cases(format, None),
        Kernel::LnQkvSplit => fused::ln_qkv_cases(format, Some(split)),
        Kernel::RmsQkv => family_fused::rms_qkv_cases(format, None),
        Kernel::RmsQkvSplit => family_fused::rms_qkv_cases(format, Some(split)),
        Kernel::RmsSwiglu => family_fused::rms_swiglu_cases(format, None),
        Kernel::RmsSwigluSplit => family_fused::rms_swiglu_cases(format, Some(split)),
        Kernel::MatvecResidual => fused::matvec_residual_cases(format, None),
        Kernel::MatvecResidualSplit => fused::matvec_residual_cases(format, Some(split)),
        Kernel::LnFcGelu => fused::ln_fc_gelu_cases(format, None),
        Kernel::LnFcGeluSplit => fused::ln_fc_gelu_cases(format, Some(split)),
        Kernel::KvWrite => {
            prefill::kv_write_cases().into_iter().chain(rows::kv_write_cases()).collect()
        }
        Kernel::Attention => {
            attention::attention_cases().into_iter().chain(rows::attention_cases()).collect()
        }
        Kernel::AttentionSplit => split::attention_split_cases(),
        Kernel::AttentionCombine => split::attention_combine_cases(),
        Kernel::AttentionProjSplit => split::attention_proj_split_cases(format, split),
        Kernel::AttentionProbs => attention::attention_probs_cases(),
        Kernel::KvMass => mass::kv_mass_cases(),
        Kernel::KvRenumber => mass::kv_renumber_cases(),
        Kernel::ResidualAdd => prefill::residual_add_cases(),
        Kernel::Gelu => prefill::gelu_cases(),
        Kernel::RmsNorm => family::rms_norm_cases(),
        Kernel::Rope => family::rope_cases(),
        Kernel::Swiglu => family::swiglu_cases(),
        Kernel::LmHead => prefill::lm_head_cases(format, Kernel::LmHead),
        Kernel::LmHeadSplit => prefill::lm_head_cases(format, Kernel::LmHeadSplit),
        Kernel::BlockSum => split::block_sum_cases(),
        Kernel::Argmax => split::argmax_cases(),
    }
}

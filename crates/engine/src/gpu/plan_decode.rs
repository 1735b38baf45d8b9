//! The dispatches of a decode step: one token. GPT-2's blocks are fused
//! (cpu profile: ln_qkv, attention, matvec_residual, ln_fc_gelu,
//! matvec_residual; gpu profile: their split shapes, attention in two halves,
//! the second folded into the output projection: five dispatches a block in
//! both). The Llama family's blocks have the same shape: rms_qkv (RMSNorm,
//! QKV, RoPE and the K/V write) and rms_swiglu (RMSNorm, gate and up,
//! SwiGLU) in place of ln_qkv and ln_fc_gelu, five dispatches a block too.

use super::plan::{add_mass, pass, Buf, Built, Layout, Ops, PolicyOps, Weight};
use crate::kernels::{
    attention, attention_combine, attention_proj_split, attention_split, kv_renumber, ln_fc_gelu,
    ln_fc_gelu_split, ln_qkv, ln_qkv_split, matvec_residual, matvec_residual_split, rms_qkv,
    rms_qkv_split, rms_swiglu, rms_swiglu_split, Profile,
};

/// The dispatches of a decode step, with what the session's cache policy adds.
pub fn decode(layout: &Layout, policy: PolicyOps) -> Built {
    let rotary = layout.config.llama().is_some();
    pass(layout, |ops, l| {
        if policy.renumber {
            ops.op(kv_renumber::Shape, &[Buf::Key(0, l), Buf::Renumbered, Buf::Turns]);
        }
        match rotary {
            true => rotary_block(layout, ops, l),
            false => fused_block(layout, ops, l),
        }
        if policy.mass {
            let c = layout.config;
            add_mass(ops, Buf::Key(0, l), c.attn_scale(l));
        }
    })
}

/// GPT-2's block: the LayerNorms fused into the matvecs that follow them.
fn fused_block(layout: &Layout, ops: &mut Ops, l: usize) {
    use Buf::*;
    let (c, w) = (layout.config, |role| Layer(l, role));
    let inner = c.n_inner as u32;
    let qkv =
        [X, w(Weight::Ln1), w(Weight::CAttn), w(Weight::CAttnBias), Qkv, Key(0, l), Value(0, l)];
    let fc = [X, w(Weight::Ln2), w(Weight::CFc), w(Weight::CFcBias), Fc];
    match layout.profile {
        Profile::Cpu => ops.op(ln_qkv::Shape, &qkv),
        Profile::Gpu(split) => ops.op(ln_qkv_split::Shape { split }, &qkv),
    }
    attend_and_project(layout, ops, l);
    match layout.profile {
        Profile::Cpu => ops.op(ln_fc_gelu::Shape { n: inner }, &fc),
        Profile::Gpu(split) => ops.op(ln_fc_gelu_split::Shape { n: inner, split }, &fc),
    }
    project_into_x(layout, ops, inner, &[Fc, w(Weight::MlpProj), w(Weight::MlpProjBias), X]);
}

/// The Llama family's block over the one row: its norms' weights share a
/// binding with the bias after them (`GpuLayer`), the rotary turns are bound
/// for rms_qkv.
fn rotary_block(layout: &Layout, ops: &mut Ops, l: usize) {
    use Buf::*;
    let (c, w) = (layout.config, |role| Layer(l, role));
    let inner = c.n_inner as u32;
    let qkv = [X, w(Weight::Ln1), w(Weight::CAttn), Qkv, Key(0, l), Value(0, l), Turns];
    let gate_up = [X, w(Weight::Ln2), w(Weight::CFc), Act];
    match layout.profile {
        Profile::Cpu => ops.op(rms_qkv::Shape, &qkv),
        Profile::Gpu(split) => ops.op(rms_qkv_split::Shape { split }, &qkv),
    }
    attend_and_project(layout, ops, l);
    match layout.profile {
        Profile::Cpu => ops.op(rms_swiglu::Shape { n: inner }, &gate_up),
        Profile::Gpu(split) => ops.op(rms_swiglu_split::Shape { n: inner, split }, &gate_up),
    }
    project_into_x(layout, ops, inner, &[Act, w(Weight::MlpProj), w(Weight::MlpProjBias), X]);
}

/// Attention over the cache and its output projection added into x: the
/// cpu profile's attention, then matvec_residual; the gpu profile's split
/// attention, its chunks merged in the projection's prologue where the heads
/// fit (one dispatch fewer).
fn attend_and_project(layout: &Layout, ops: &mut Ops, l: usize) {
    use Buf::*;
    let (c, w) = (layout.config, |role| Layer(l, role));
    let (kc, vc, scale, e) = (Key(0, l), Value(0, l), c.attn_scale(l), c.n_embd as u32);
    let proj = [Y, w(Weight::AttnProj), w(Weight::AttnProjBias), X];
    match layout.profile {
        Profile::Cpu => ops.op(attention::Shape { scale }, &[Qkv, kc, vc, Y]),
        Profile::Gpu(split) => {
            ops.op(attention_split::Shape { scale }, &[Qkv, kc, vc, Parts]);
            if c.n_head <= attention_proj_split::MAX_HEADS {
                let proj = [Parts, w(Weight::AttnProj), w(Weight::AttnProjBias), X];
                return ops.op(attention_proj_split::Shape { split }, &proj);
            }
            ops.op(attention_combine::Shape, &[Parts, Y]);
        }
    }
    project_into_x(layout, ops, e, &proj);
}

/// x += input · W + b over `k` inputs (a block's projection into the residual stream).
fn project_into_x(layout: &Layout, ops: &mut Ops, k: u32, buffers: &[Buf]) {
    let n = layout.config.n_embd as u32;
    match layout.profile {
        Profile::Cpu => ops.op(matvec_residual::Shape { k, n }, buffers),
        Profile::Gpu(split) => ops.op(matvec_residual_split::Shape { k, n, split }, buffers),
    }
}

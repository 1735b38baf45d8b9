//! `shaders/rms_swiglu.wgsl`: decode's fused RMSNorm → gate and up
//! projection → SwiGLU for the Llama family (prefill runs the three as
//! `rms_norm`, `matmul`, `swiglu`).

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, rounds};
use super::pair_cols;
use super::rms_qkv::{normalised, rms_fused_cost};
use super::{matmul, swiglu};
use super::{At, Cost, Launch, WG};
use crate::storage::format::Format;
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    /// Outputs (n_inner); the weights have twice as many columns.
    pub n: u32,
    pub eps: f32,
    pub _pad: u32,
}

/// act = swiglu(rms_norm(x) @ w + bias), `w`'s columns gate and up in turn.
pub fn run_cpu(
    x: &[f32],      // (n_embd)
    weight: &[f32], // (n_embd) the norm's
    eps: f32,
    w: &Matrix,      // (n_embd, 2 * n) in its format
    bias: &[f32],    // (2 * n)
    act: &mut [f32], // (n)
) {
    let mut gate_up = vec![0.0; w.cols]; // (2 * n) gate, up in turn
    matmul::run_cpu(&normalised(x, weight, eps), w, bias, &mut gate_up);
    swiglu::run_cpu(&gate_up, act);
}

/// One dispatch: decode's second RMSNorm, the gate and up projection to
/// `2n` columns and SwiGLU to `n`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n_embd: at.n_embd(), n: self.n, eps: at.eps(), _pad: 0 }
    }

    /// Dispatch size: one invocation per `pair_cols` columns of gate and up.
    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        [(2 * p.n).div_ceil(WG * pair_cols(format)), 1, 1]
    }

    /// The RMSNorm's passes, then one round per row of k.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, n) = (u64::from(p.n_embd), u64::from(p.n));
        let io = floats(2 * e + 3 * n); // x, the norm's weight, the bias, act written
        rms_fused_cost((e, 2 * n, io), self.workgroups(p, format), WG, rounds(e, 1), format)
    }
}

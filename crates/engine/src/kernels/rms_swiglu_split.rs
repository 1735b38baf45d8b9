//! `shaders/rms_swiglu_split.wgsl`: rms_swiglu on real GPUs, the
//! projection's k split over the workgroup (`shaders/split_k.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::rms_qkv::rms_fused_cost;
use super::rms_qkv_split::paired;
use super::{At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub n: u32,
    pub eps: f32,
    /// Column groups side by side ([`paired`]).
    pub wide: u32,
}

/// rms_swiglu's twin (the GPU adds each dot product's terms in another order).
pub use super::rms_swiglu::run_cpu;

/// One dispatch to `n` outputs, its workgroups laid out as [`paired`]`(split)` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n: u32,
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n_embd: at.n_embd(), n: self.n, eps: at.eps(), wide: paired(self.split).wide }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        paired(self.split).groups(2 * p.n, format)
    }

    /// As rms_qkv_split's, without the turn.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, n, groups) = (u64::from(p.n_embd), u64::from(p.n), self.workgroups(p, format));
        let dot = paired(self.split).dot_rounds(p.n_embd);
        rms_fused_cost((e, 2 * n, floats(2 * e + 3 * n)), groups, WG_SPLIT, dot, format)
    }
}

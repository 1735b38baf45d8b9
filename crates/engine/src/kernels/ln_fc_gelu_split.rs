//! `shaders/ln_fc_gelu_split.wgsl`: ln_fc_gelu on real GPUs, the projection's
//! k split over the workgroup (`shaders/split_k.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ln_qkv::fused_cost;
use super::{At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub n: u32,
    pub eps: f32,
    /// Column groups side by side ([`Split::wide`]).
    pub wide: u32,
}

/// fc = gelu_new(layernorm(x) @ w + bias): ln_fc_gelu's twin (the GPU adds
/// each dot product's terms in another order).
pub use super::ln_fc_gelu::run_cpu;

/// One dispatch to `n` columns, its workgroups laid out as `split` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n: u32,
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n_embd: at.n_embd(), n: self.n, eps: at.eps(), wide: self.split.wide }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        self.split.groups(p.n, format)
    }

    /// As ln_qkv_split's.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, groups) = (u64::from(p.n_embd), self.workgroups(p, format));
        fused_cost(e, u64::from(p.n), groups, WG_SPLIT, self.split.dot_rounds(p.n_embd), format)
    }
}

//! `shaders/ln_qkv_split.wgsl`: ln_qkv on real GPUs, the projection's k
//! split over the workgroup (`shaders/split_k.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::ln_qkv::fused_cost;
use super::{qkv_cols, At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub slot: u32,
    pub eps: f32,
    /// Column groups side by side ([`Split::wide`]).
    pub wide: u32,
    /// Query heads per K/V head.
    pub group: u32,
    pub head_size: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// qkv = layernorm(x) @ w + bias; key_cache[slot] = its k, value_cache[slot] =
/// its v: ln_qkv's twin (the GPU adds each dot product's terms in another order).
pub use super::ln_qkv::run_cpu;

/// One dispatch, its workgroups laid out as `split` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            n_embd: at.n_embd(),
            slot: at.slot0,
            eps: at.eps(),
            wide: self.split.wide,
            group: at.group(),
            head_size: at.head_size(),
            _pad0: 0,
            _pad1: 0,
        }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        self.split.groups(qkv_cols(p.n_embd, p.group), format)
    }

    /// The LayerNorm's three passes (256 wide), then the slice's rows,
    /// `UNROLL` a round.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, groups) = (u64::from(p.n_embd), self.workgroups(p, format));
        let n = u64::from(qkv_cols(p.n_embd, p.group));
        fused_cost(e, n, groups, WG_SPLIT, self.split.dot_rounds(p.n_embd), format)
    }
}

//! `shaders/rms_qkv_split.wgsl`: rms_qkv on real GPUs, the projection's k
//! split over the workgroup (`shaders/split_k.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::rms_qkv::rms_fused_cost;
use super::{qkv_cols, At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_embd: u32,
    pub slot: u32,
    pub eps: f32,
    /// Column groups side by side ([`paired`]).
    pub wide: u32,
    /// Query heads per K/V head.
    pub group: u32,
    pub head_size: u32,
    /// This token's position: its row of the turns table.
    pub pos: u32,
    pub _pad: u32,
}

/// rms_qkv's twin (the GPU adds each dot product's terms in another order).
pub use super::rms_qkv::run_cpu;

/// `split` with at least two column groups side by side: the two columns of
/// a pair (rotary, or gate and up) must meet in one workgroup, and with
/// f32 weights (a column a word) they are neighbouring groups.
pub fn paired(split: Split) -> Split {
    Split { wide: split.wide.max(2) }
}

/// One dispatch, its workgroups laid out as [`paired`]`(split)` says.
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
            wide: paired(self.split).wide,
            group: at.group(),
            head_size: at.head_size(),
            pos: at.turn0,
            _pad: 0,
        }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        paired(self.split).groups(qkv_cols(p.n_embd, p.group), format)
    }

    /// The RMSNorm's two passes (256 wide), then the slice's rows,
    /// `DOT_ROWS` a round, then the turn.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (e, hs, groups) =
            (u64::from(p.n_embd), u64::from(p.head_size), self.workgroups(p, format));
        let dot = paired(self.split).dot_rounds(p.n_embd) + 1;
        let n = u64::from(qkv_cols(p.n_embd, p.group));
        let io = floats(2 * e + 2 * n + hs);
        rms_fused_cost((e, n, io), groups, WG_SPLIT, dot, format)
    }
}

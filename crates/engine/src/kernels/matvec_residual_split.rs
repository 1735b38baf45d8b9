//! `shaders/matvec_residual_split.wgsl`: matvec_residual on real GPUs, the
//! projection's k split over the workgroup (`shaders/split_k.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::cost::invocations;
use super::matvec_residual::residual_cost;
use super::{At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub k: u32,
    pub n: u32,
    /// Column groups side by side ([`Split::wide`]).
    pub wide: u32,
    pub _pad: u32,
}

/// x += y @ w + bias: matvec_residual's twin (the GPU adds each dot
/// product's terms in another order).
pub use super::matvec_residual::run_cpu;

/// One dispatch, `[k] → [n]`, its workgroups laid out as `split` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub k: u32,
    pub n: u32,
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, _: &At) -> Params {
        Params { k: self.k, n: self.n, wide: self.split.wide, _pad: 0 }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        self.split.groups(p.n, format)
    }

    /// The slice's rows, `UNROLL` a round (inputs and weights together).
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let calls = invocations(self.workgroups(p, format), WG_SPLIT);
        residual_cost(p.k, p.n, calls, self.split.dot_rounds(p.k), format)
    }
}

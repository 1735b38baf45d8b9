//! `shaders/residual_add.wgsl`: the residual stream takes a block's output.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::{At, Cost, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// x += y
pub fn run_cpu(
    y: &[f32],     // (n)
    x: &mut [f32], // (n)
) {
    for (xv, yv) in x.iter_mut().zip(y) {
        *xv += yv;
    }
}

/// One dispatch: x += y over `cols` columns of every row.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub cols: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n: at.n_rows * self.cols, _pad0: 0, _pad1: 0, _pad2: 0 }
    }

    /// Dispatch size: one thread per element.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        super::grid_1d(p.n as usize)
    }

    /// Element-wise: one round.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let n = u64::from(p.n);
        Cost::one_round(self.workgroups(p, Format::F32), floats(2 * n))
    }
}

//! `shaders/residual_add.wgsl`: the residual stream takes a block's output.

use bytemuck::{Pod, Zeroable};

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

/// Dispatch size: one thread per element.
pub fn workgroups(p: &Params) -> [u32; 3] {
    super::grid_1d(p.n as usize)
}

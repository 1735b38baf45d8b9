//! `shaders/block_sum.wgsl`: the device's read rate (not a step of the model):
//! each workgroup sums a block of a large buffer and writes one value.

use bytemuck::{Pod, Zeroable};

use super::cost::{invocations, rounds, UNROLL};
use super::{Cost, WG_SPLIT};

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    /// 16-byte words in the buffer.
    pub n: u32,
    /// Words per workgroup (the last takes what is left).
    pub per_group: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// sums[g] = the wrapping sum of every u32 of words `g · per_group ..`
/// (16-byte words: four u32 each). Integer adds: exact in any order.
pub fn run_cpu(
    data: &[u32], // (n, 4)
    per_group: usize,
    sums: &mut [u32], // (workgroups)
) {
    for (sum, block) in sums.iter_mut().zip(data.chunks(per_group * 4)) {
        *sum = block.iter().fold(0u32, |a, &v| a.wrapping_add(v));
    }
}

/// One dispatch: `words` 16-byte words in blocks of `per_group` (the last
/// takes what is left). Not a step of the model: its shape is all it reads.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub words: u32,
    pub per_group: u32,
}

impl Shape {
    /// Its `Params`.
    pub fn params(&self) -> Params {
        Params { n: self.words, per_group: self.per_group, _pad0: 0, _pad1: 0 }
    }

    /// One workgroup per block.
    pub fn workgroups(&self) -> [u32; 3] {
        [self.words.div_ceil(self.per_group.max(1)), 1, 1]
    }

    /// Each invocation's words of its block, `UNROLL` a round; neighbours
    /// read neighbouring words.
    pub fn cost(&self) -> Cost {
        let per_thread = u64::from(self.per_group).div_ceil(u64::from(WG_SPLIT));
        Cost::plain(
            invocations(self.workgroups(), WG_SPLIT),
            rounds(per_thread, UNROLL),
            16 * u64::from(self.words),
        )
    }
}

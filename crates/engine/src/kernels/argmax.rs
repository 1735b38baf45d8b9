//! `shaders/argmax.wgsl`: the greedy token of a row of logits, on the device:
//! each workgroup writes its block's first largest number with its index,
//! and [`finish`] picks among the blocks, so a greedy step reads back
//! [`Shape::groups`] × 8 bytes instead of the row.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, rounds, UNROLL};
use super::{At, Cost, Launch, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    /// Logits in the row.
    pub n: u32,
    /// Logits per workgroup (the last takes what is left).
    pub per_group: u32,
    /// The row's first element in the logits buffer.
    pub row0: u32,
    pub _pad: u32,
}

/// Logits each workgroup takes: four loads per invocation (one round), so
/// GPT-2's 50,257 are 50 workgroups and 400 bytes read back.
pub const PER_GROUP: u32 = WG_SPLIT * UNROLL as u32;

/// A block without a number (every logit NaN): its index in the WGSL.
pub const NONE: u32 = u32::MAX;

/// best[g] = (index, value bits) of the first largest non-NaN logit of block
/// `g` of `row` (blocks of `per_group`), or (NONE, 0) for a block of NaNs.
pub fn run_cpu(
    row: &[f32], // (n)
    per_group: usize,
    best: &mut [[u32; 2]], // (workgroups)
) {
    for (g, (b, block)) in best.iter_mut().zip(row.chunks(per_group)).enumerate() {
        let numbers = block.iter().enumerate().filter(|(_, v)| !v.is_nan());
        let first_largest = numbers.fold(None, |m: Option<(usize, f32)>, (i, &v)| match m {
            Some((_, top)) if v <= top => m,
            _ => Some((i, v)),
        });
        *b = match first_largest {
            Some((i, v)) => [(g * per_group + i) as u32, v.to_bits()],
            None => [NONE, 0],
        };
    }
}

/// The row's greedy token from the blocks' candidates: the largest (the
/// first on a tie), or the row's last index when every logit is NaN — what
/// `engine::sample::argmax` gives for the whole row.
pub fn finish(best: &[[u32; 2]], n: usize) -> u32 {
    let numbers = best.iter().filter(|b| b[0] != NONE).map(|b| (b[0], f32::from_bits(b[1])));
    let top = numbers.fold(None, |m: Option<(u32, f32)>, (i, v)| match m {
        Some((j, top)) if v < top || (v == top && j < i) => m,
        _ => Some((i, v)),
    });
    top.map_or(n.saturating_sub(1) as u32, |(i, _)| i)
}

/// One dispatch over the last row of the pass's logits.
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Shape {
    /// Workgroups (and candidates read back) for a row of `n` logits.
    pub fn groups(n: u32) -> u32 {
        n.div_ceil(PER_GROUP).max(1)
    }
}

impl Launch for Shape {
    /// The pass's last row of logits (row `lm_rows - 1` of the buffer).
    fn params(&self, at: &At) -> Params {
        let n = at.config.vocab_size as u32;
        let row0 = at.lm_rows.saturating_sub(1) * n;
        Params { n, per_group: PER_GROUP, row0, _pad: 0 }
    }

    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n.div_ceil(p.per_group.max(1)), 1, 1]
    }

    /// One round of four loads per invocation, then the block's tree.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let per_invocation = u64::from(p.per_group).div_ceil(u64::from(WG_SPLIT));
        Cost::plain(
            invocations(self.workgroups(p, format), WG_SPLIT),
            rounds(per_invocation, UNROLL),
            floats(u64::from(p.n)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks' candidates, finished, are `sample::argmax` of the row:
    /// ties to the first, NaNs skipped, a row of NaNs its last index.
    #[test]
    fn blocks_then_finish_is_the_rows_argmax() {
        let nan = f32::NAN;
        let rows: [&[f32]; 8] = [
            &[1.0, 3.0, 2.0],
            &[3.0, 1.0, 3.0, 3.0],
            &[nan, 1.0, nan, 3.0, nan],
            &[nan, nan, nan],
            &[f32::NEG_INFINITY; 4],
            &[-1.0, f32::INFINITY, 5.0, f32::INFINITY],
            &[nan],
            &[0.5, nan, 0.5, 7.0, 7.0, nan, 7.0, -2.0, nan],
        ];
        for row in rows {
            for per_group in [1, 2, 3, 1000] {
                let mut best = vec![[0; 2]; row.len().div_ceil(per_group)];
                run_cpu(row, per_group, &mut best);
                let got = finish(&best, row.len());
                assert_eq!(got, crate::sample::argmax(row), "{row:?} in blocks of {per_group}");
            }
        }
    }
}

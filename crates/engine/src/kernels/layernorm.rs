//! `shaders/layernorm.wgsl`: LayerNorm over each row.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, rounds};
use super::{At, Cost, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_embd: u32,
    pub eps: f32,
    pub _pad: u32,
}

/// out[row, :] = (x - mean) / sqrt(var + eps) * weight + bias, per row.
pub fn run_cpu(
    x: &[f32],      // (n_rows, n_embd)
    weight: &[f32], // (n_embd)
    bias: &[f32],   // (n_embd)
    eps: f32,
    out: &mut [f32], // (n_rows, n_embd)
) {
    let n_embd = weight.len();
    for (xr, or) in x.chunks_exact(n_embd).zip(out.chunks_exact_mut(n_embd)) {
        let mean = xr.iter().sum::<f32>() / n_embd as f32;
        let var = xr.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n_embd as f32;
        let rstd = 1.0 / (var + eps).sqrt();
        for c in 0..n_embd {
            or[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
        }
    }
}

/// One dispatch over every row of the pass.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Invocations per workgroup it is compiled with (the profile's).
    pub wg: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n_rows: at.n_rows, n_embd: at.n_embd(), eps: at.eps(), _pad: 0 }
    }

    /// Dispatch size: one workgroup per row.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_rows, 1, 1]
    }

    /// The statistics ([`stats_rounds`]), then one round per element normalised.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let (rows, e) = (u64::from(p.n_rows), u64::from(p.n_embd));
        Cost::plain(
            rows * u64::from(self.wg),
            stats_rounds(e, self.wg) + rounds(e, u64::from(self.wg)),
            floats(rows * e + 2 * e),
        )
    }
}

/// Elements of a row one invocation of `ln_stats` (shaders/ln_stats.wgsl)
/// loads before storing any, as `normalise_row` does the LayerNorm's weight
/// and bias: `ROW_LOADS` there.
pub const ROW_LOADS: u64 = 4;

/// Above this many invocations `ln_stats` stages the row in workgroup memory.
const STAGED_ABOVE: u32 = 64;

/// Rounds of global loads of `ln_stats` over a row of `e` with `wg`
/// invocations: the row staged, else two passes over it.
pub fn stats_rounds(e: u64, wg: u32) -> u64 {
    match wg > STAGED_ABOVE {
        true => rounds(e, ROW_LOADS * u64::from(wg)),
        false => 2 * rounds(e, u64::from(wg)),
    }
}

/// Rounds of global loads of `normalise_row` after the statistics (the
/// LayerNorm's weight and bias; `ROW_LOADS` a round where staged).
pub fn norm_rounds(e: u64, wg: u32) -> u64 {
    match wg > STAGED_ABOVE {
        true => rounds(e, ROW_LOADS * u64::from(wg)),
        false => rounds(e, u64::from(wg)),
    }
}

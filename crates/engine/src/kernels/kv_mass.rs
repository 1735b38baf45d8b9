//! `shaders/kv_mass.wgsl`: each cache slot adds the attention a layer's
//! queries gave it (the heavy-hitter policy's running totals).

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations};
use super::{At, Cost, Launch, WG};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_cols: u32,
    pub n_head: u32,
    pub _pad: u32,
}

/// mass[j] += Σ_h Σ_row probs[h, row, j], heads then rows, as the shader sums.
pub fn run_cpu(
    probs: &[f32], // (n_head, n_rows, n_cols)
    n_head: usize,
    n_rows: usize,
    mass: &mut [f32], // (n_cols)
) {
    let n_cols = mass.len();
    for (j, m) in mass.iter_mut().enumerate() {
        let mut s = 0.0;
        for hr in 0..n_head * n_rows {
            s += probs[hr * n_cols + j];
        }
        *m += s;
    }
}

/// One dispatch: the pass's rows' attention added to the slots they read.
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        let n_head = at.config.n_head as u32;
        Params { n_rows: at.n_rows, n_cols: at.keys0 + at.n_rows, n_head, _pad: 0 }
    }

    /// Dispatch size: one thread per slot.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        super::grid_1d(p.n_cols as usize)
    }

    /// A serial sum of n_head · n_rows per slot, reading down columns (strided).
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let terms = u64::from(p.n_head) * u64::from(p.n_rows);
        let n = u64::from(p.n_cols);
        Cost::plain(
            invocations(self.workgroups(p, Format::F32), WG),
            terms,
            floats(n * terms + 2 * n),
        )
    }
}

//! `shaders/matmul_split.wgsl`: a batched decode step's linear layers on real
//! GPUs, up to [`MAX_ROWS`] rows (one per sequence) with k split over the
//! workgroup (`shaders/split_k.wgsl`): each weight is read once for every row.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring, UNROLL};
use super::{At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::{Channels, Format};

/// Rows a dispatch takes at most (`MAX_ROWS` in the shader): a batch of more
/// sequences runs matmul_tiled.
pub const MAX_ROWS: usize = 8;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// Column groups side by side ([`Split::wide`]).
    pub wide: u32,
}

/// out[m, n] = sum_k x[m, k] * w[k, n] + bias[n] for m ≤ [`MAX_ROWS`]:
/// matmul's twin (the GPU adds each dot product's terms in another order).
pub use super::matmul::run_cpu;

/// One dispatch, `[k] → [n]` over the pass's rows, laid out as `split` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub k: u32,
    pub n: u32,
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { m: at.n_rows, k: self.k, n: self.n, wide: self.split.wide }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        self.split.groups(p.n, format)
    }

    /// The slice's rows, `UNROLL` a round (every row's input and the
    /// weights together), then the bias.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (m, k, n) = (u64::from(p.m), u64::from(p.k), u64::from(p.n));
        let weights = matrix_bytes(format, k, n, Channels::Cols);
        Cost::plain(
            invocations(self.workgroups(p, format), WG_SPLIT),
            self.split.slice_rounds(p.k, UNROLL) + 1,
            floats(m * k + n),
        )
        .with_weights(weights, neighbouring(1, format))
    }
}

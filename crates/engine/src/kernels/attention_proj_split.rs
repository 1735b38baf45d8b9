//! `shaders/attention_proj_split.wgsl`: on real GPUs, a decode step's
//! attention_combine folded into the output projection and residual add
//! (each workgroup merges the chunks' partials into the query's output row
//! in workgroup memory, then projects it as matvec_residual_split does):
//! one dispatch fewer per block.

use bytemuck::{Pod, Zeroable};

use super::attention_split::{chunks, part_len};
use super::cost::{floats, invocations, rounds, UNROLL};
use super::matvec_residual::{self, residual_cost};
use super::{attention_combine, At, Cost, Launch, Split, WG_SPLIT};
use crate::storage::format::Format;
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub keys0: u32,
    pub n_embd: u32,
    pub head_size: u32,
    /// Column groups side by side ([`Split::wide`]).
    pub wide: u32,
}

/// The most heads whose merge statistics a workgroup holds (`MAX_HEADS` in
/// the WGSL): a model with more takes attention_combine and
/// matvec_residual_split instead (`gpu::plan`).
pub const MAX_HEADS: usize = 256;

/// x += combine(parts) @ w + bias: attention_combine's twin, then
/// matvec_residual's (the GPU merges and sums in other orders).
pub fn run_cpu(
    parts: &[f32], // (chunks, n_head, 2 + head_size)
    head_size: usize,
    keys0: usize,
    w: &Matrix,    // (n_embd, n_embd) in its format
    bias: &[f32],  // (n_embd)
    x: &mut [f32], // (n_embd)
) {
    let mut y = vec![0.0; x.len()]; // (n_embd) the attention's output row
    attention_combine::run_cpu(parts, x.len(), head_size, keys0, &mut y);
    matvec_residual::run_cpu(&y, w, bias, x)
}

/// One dispatch over the pass's one row, its workgroups laid out as `split` says.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub split: Split,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            keys0: at.keys0,
            n_embd: at.n_embd(),
            head_size: at.head_size(),
            wide: self.split.wide,
        }
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        self.split.groups(p.n_embd, format)
    }

    /// The projection's (matvec_residual_split's), after the merge: each
    /// head's statistics (two passes over its chunks, four a round), then
    /// the invocation's elements of the row, two at a time (one pass over
    /// the chunks each). The partials are read by every workgroup, but
    /// counted once: the cache serves the re-reads.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let calls = invocations(self.workgroups(p, format), WG_SPLIT);
        let projection =
            residual_cost(p.n_embd, p.n_embd, calls, self.split.dot_rounds(p.n_embd), format);
        let n = chunks(p.keys0 as usize) as u64;
        let heads = u64::from(p.n_embd / p.head_size);
        let per_invocation = |items: u64| items.div_ceil(u64::from(WG_SPLIT));
        let merge = per_invocation(heads) * 2 * rounds(n, UNROLL)
            + per_invocation(u64::from(p.n_embd)).div_ceil(2) * rounds(n, UNROLL);
        let parts = floats(n * heads * part_len(p.head_size as usize) as u64);
        Cost {
            chain: projection.chain + merge,
            // The row comes from the partials, not from a y buffer.
            bytes: projection.bytes - floats(u64::from(p.n_embd)) + parts,
            ..projection
        }
    }
}

//! `shaders/attention_combine.wgsl`: flash-decoding's second half on real
//! GPUs: every chunk's partials merged into the query's output.

use bytemuck::{Pod, Zeroable};

use super::attention_split::{chunks, part_len};
use super::cost::{floats, invocations, rounds, UNROLL};
use super::{At, Cost, Launch, WG_SPLIT};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub keys0: u32,
    pub n_embd: u32,
    pub head_size: u32,
    pub row0: u32,
}

/// y[h0 + d] = Σ_c exp(m_c − M) · acc_c[d] / Σ_c exp(m_c − M) · l_c with
/// M = max_c m_c, over the chunks of keys `0..=keys0` (attention_split's parts).
pub fn run_cpu(
    parts: &[f32], // (chunks, n_head, 2 + head_size)
    n_embd: usize,
    head_size: usize,
    keys0: usize,
    y: &mut [f32], // (n_embd) the query's row
) {
    let (n_head, len) = (n_embd / head_size, part_len(head_size));
    for h in 0..n_head {
        let part = |c: usize| &parts[(c * n_head + h) * len..][..len];
        let big = (0..chunks(keys0)).fold(f32::MIN, |m, c| m.max(part(c)[0]));
        let (mut l, out) = (0.0, &mut y[h * head_size..][..head_size]);
        out.fill(0.0);
        for c in 0..chunks(keys0) {
            let e = crate::fast::exp::exp(part(c)[0] - big);
            l += e * part(c)[1];
            for (o, a) in out.iter_mut().zip(&part(c)[2..]) {
                *o += e * a;
            }
        }
        out.iter_mut().for_each(|o| *o /= l);
    }
}

/// One dispatch: the pass's one row (a batch's sequence: its row).
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { keys0: at.keys0, n_embd: at.n_embd(), head_size: at.head_size(), row0: at.row0 }
    }

    /// One workgroup per head.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        [p.n_embd / p.head_size, 1, 1]
    }

    /// Two passes over the chunks (the maximum, then the sums), four chunks a round.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let n = chunks(p.keys0 as usize) as u64;
        let heads = u64::from(p.n_embd / p.head_size);
        Cost::plain(
            invocations(self.workgroups(p, format), WG_SPLIT),
            2 * rounds(n, UNROLL),
            floats(n * heads * part_len(p.head_size as usize) as u64),
        )
    }
}

//! `shaders/rope.wgsl`: rotary positions on a pass's queries and keys.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::{grid_1d, At, Cost, Heads, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    /// Pairs turned: n_rows · (n_embd + kv_dim) / 2 (q's and k's).
    pub n: u32,
    pub n_embd: u32,
    pub head_size: u32,
    pub pos0: u32,
    /// First row of qkv this dispatch works on (a batch's sequence).
    pub row0: u32,
    /// Numbers in a key row (one K head per group of query heads).
    pub kv_dim: u32,
    pub _pad: [u32; 2],
}

/// Each position's turns: pair i of position `pos` turns by the angle
/// `pos · inv_freq[i]`, the f32 product as `transformers` forms it, whose
/// cosine and sine are taken in f64 and rounded. The CPU engine makes a
/// pass's rows' turns; the GPU engine uploads a table of every position.
pub fn turns(
    inv_freq: &[f32], // (head_size / 2)
    pos0: usize,
    rows: usize,
) -> Vec<(f32, f32)> {
    // (rows, head_size / 2) cosine, sine
    let angle = |r: usize, f: f32| f64::from((pos0 + r) as f32 * f);
    let turn = |a: f64| (libm::cos(a) as f32, libm::sin(a) as f32);
    (0..rows).flat_map(|r| inv_freq.iter().map(move |&f| turn(angle(r, f)))).collect()
}

/// Rotates each query and key head of `qkv`'s rows by its row's `turns`:
/// pair i is dimensions (2i, 2i + 1), "rotate half"'s (i, i + head_size / 2)
/// as the model's weights are laid out (`model/weights_llama.rs`).
pub fn run_cpu(
    qkv: &mut [f32], // (n_rows, n_embd + 2 * kv_dim): q | k | v, v untouched
    heads: Heads,
    turns: &[(f32, f32)], // (n_rows, head_size / 2) from [`turns`]
) {
    let (rotated, hs) = (heads.n_embd + heads.kv_dim(), heads.head_size);
    for (row, turn) in qkv.chunks_exact_mut(heads.qkv_width()).zip(turns.chunks_exact(hs / 2)) {
        for head in row[..rotated].chunks_exact_mut(hs) {
            for (pair, &t) in head.chunks_exact_mut(2).zip(turn) {
                let (x, y) = turned(pair[0], pair[1], t);
                (pair[0], pair[1]) = (x, y);
            }
        }
    }
}

/// The pair (x, y) turned by (cos, sin), as every kernel that rotates forms it
/// (`shaders/turned.wgsl`).
pub fn turned(x: f32, y: f32, (cos, sin): (f32, f32)) -> (f32, f32) {
    (x * cos + -y * sin, y * cos + x * sin)
}

/// One dispatch over every row of the pass, at its positions.
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        let (n_embd, kv_dim) = (at.n_embd(), at.config.kv_dim() as u32);
        let (head_size, pos0, row0) = (at.head_size(), at.turn0, at.row0);
        let n = at.n_rows * (n_embd + kv_dim) / 2;
        Params { n, n_embd, head_size, pos0, row0, kv_dim, _pad: [0; 2] }
    }

    /// One invocation per pair ([`grid_1d`]).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        grid_1d(p.n as usize)
    }

    /// One round: each invocation reads its pair and its turn, writes the pair.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let n = u64::from(p.n);
        Cost::one_round(self.workgroups(p, Format::F32), floats(4 * n + 2 * n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{close, values};

    #[test]
    fn turns_each_pair_by_its_angle_and_leaves_v() {
        for (n_head, hs, rows, pos0) in [(1, 2, 1, 0), (3, 8, 5, 61), (2, 64, 2, 1757)] {
            let heads = Heads::each(n_head * hs, hs);
            let e = heads.n_embd;
            let inv: Vec<f32> =
                (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
            let x = values(rows * 3 * e, 3);
            let mut got = x.clone();
            run_cpu(&mut got, heads, &turns(&inv, pos0, rows));
            let mut want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            for r in 0..rows {
                for h in 0..2 * n_head {
                    for (i, &f) in inv.iter().enumerate() {
                        let a = f64::from((pos0 + r) as f32 * f);
                        let (j, k) = (r * 3 * e + h * hs + 2 * i, r * 3 * e + h * hs + 2 * i + 1);
                        let (u, v) = (f64::from(x[j]), f64::from(x[k]));
                        want[j] = u * a.cos() - v * a.sin();
                        want[k] = v * a.cos() + u * a.sin();
                    }
                }
            }
            close(&got, &want, 1e-6);
            // v is not touched.
            assert_eq!(got[2 * e..3 * e], x[2 * e..3 * e]);
        }
    }
}

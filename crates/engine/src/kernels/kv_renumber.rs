//! `shaders/kv_renumber.wgsl`: StreamingLLM's positions within the cache —
//! the keys of the slots after an evicted token turn back one position.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::rope::turned;
use super::{grid_1d, At, Cost, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    /// Pairs turned: renumbered slots · kv_dim / 2.
    pub n: u32,
    pub kv_dim: u32,
    pub head_size: u32,
    pub _pad: u32,
}

/// Turns each K head of the keys in `slots` back by one position: pair i by
/// `one`'s turn i (position 1's, from [`rope::turns`](super::rope::turns)),
/// its sine negated, as the shader forms it.
pub fn run_cpu(
    key_cache: &mut [f32], // (held, kv_dim)
    kv_dim: usize,
    head_size: usize,
    slots: &[usize],
    one: &[(f32, f32)], // (head_size / 2) position 1's cos, sin
) {
    for &slot in slots {
        let key = &mut key_cache[slot * kv_dim..][..kv_dim];
        for head in key.chunks_exact_mut(head_size) {
            for (pair, &(cos, sin)) in head.chunks_exact_mut(2).zip(one) {
                (pair[0], pair[1]) = turned(pair[0], pair[1], (cos, -sin));
            }
        }
    }
}

/// One dispatch over the listed slots' keys (none when nothing left).
#[derive(Clone, Copy, Debug)]
pub struct Shape;

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        let (kv_dim, head_size) = (at.config.kv_dim() as u32, at.head_size());
        Params { n: at.renumbered * kv_dim / 2, kv_dim, head_size, _pad: 0 }
    }

    /// One invocation per pair ([`grid_1d`]).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        grid_1d(p.n as usize)
    }

    /// One round: each invocation reads its slot, its pair and its turn, writes the pair.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let n = u64::from(p.n);
        Cost::one_round(self.workgroups(p, Format::F32), floats(n + 4 * n + 2 * n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rope::turns;
    use crate::kernels::testing::{close, values};

    #[test]
    fn turns_back_only_the_listed_keys_by_one_position() {
        for (kv_heads, hs, held, slots) in
            [(1, 2, 1, vec![0]), (2, 8, 7, vec![1, 2, 6]), (3, 64, 65, (3..65).collect())]
        {
            let kv_dim = kv_heads * hs;
            let inv: Vec<f32> =
                (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
            let x = values(held * kv_dim, 5);
            let mut got = x.clone();
            run_cpu(&mut got, kv_dim, hs, &slots, &turns(&inv, 1, 1));
            for s in 0..held {
                let (row, was) = (&got[s * kv_dim..][..kv_dim], &x[s * kv_dim..][..kv_dim]);
                if !slots.contains(&s) {
                    assert_eq!(row, was, "slot {s} is not listed");
                    continue;
                }
                let mut want = vec![0f64; kv_dim];
                for h in 0..kv_heads {
                    for (i, &f) in inv.iter().enumerate() {
                        let a = -f64::from(f);
                        let j = h * hs + 2 * i;
                        let (u, v) = (f64::from(was[j]), f64::from(was[j + 1]));
                        want[j] = u * a.cos() - v * a.sin();
                        want[j + 1] = v * a.cos() + u * a.sin();
                    }
                }
                close(row, &want, 1e-6);
            }
        }
    }
}

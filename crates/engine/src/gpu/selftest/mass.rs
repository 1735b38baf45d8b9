//! The cache policies' kernels. kv_mass: softmax-like weights (in [0, 1])
//! added to running totals already in the slots, at awkward sizes (one
//! slot, 63/65 slots around a workgroup, 1757 slots, many heads × rows).
//! Tolerance: the sum of n_head · n_rows terms in [0, 1] in the same order
//! on both sides, so only a fused add may differ: 1e-6 abs + 1e-6 rel.
//! kv_renumber: listed slots' keys turned back one position, the others
//! untouched; two products and a sum per number, as rope: 1e-6.

use super::inputs::{at, bytes, config, launch, random, Case, Tolerance};
use crate::kernels::{kv_mass, kv_renumber, rope, At, Kernel};
use crate::storage::format::Format;

/// (query heads, head size, query heads per K/V head, slots held, every
/// how many-th slot is listed): one pair, narrow K heads, 63/65 and 1757
/// slots, and a list of none.
const RENUMBER_SHAPES: [(usize, usize, usize, usize, usize); 5] =
    [(1, 2, 1, 1, 1), (3, 8, 3, 65, 2), (9, 64, 3, 63, 1), (2, 64, 2, 1757, 7), (4, 16, 1, 9, 0)];

pub fn kv_renumber_cases() -> Vec<Case> {
    let shapes = RENUMBER_SHAPES.iter().enumerate();
    let case =
        |(i, &(n_head, hs, group, held, every)): (usize, &(usize, usize, usize, usize, usize))| {
            let c = config(n_head, hs, group, 1);
            let kv_dim = c.kv_dim();
            let inv: Vec<f32> =
                (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
            let table = rope::turns(&inv, 0, 2); // positions 0 and 1, as the GPU holds them
            let flat: Vec<f32> = table.iter().flat_map(|&(cos, sin)| [cos, sin]).collect();
            let listed: Vec<usize> = match every {
                0 => Vec::new(),
                k => (0..held).rev().step_by(k).collect(), // any order: slots are not positions
            };
            let keys = random(held * kv_dim, 70 + i as u64);
            let mut want = keys.clone();
            kv_renumber::run_cpu(&mut want, kv_dim, hs, &listed, &table[hs / 2..]);
            // Past the count the list holds a slot that must not turn.
            let mut list: Vec<u32> = listed.iter().map(|&s| s as u32).collect();
            list.push(0);
            let at = At { renumbered: listed.len() as u32, ..at(&c, 1) };
            let (params, groups) = launch(&kv_renumber::Shape, &at, Format::F32);
            Case {
                kernel: Kernel::KvRenumber,
                format: Format::F32,
                shape: format!(
                    "{} of {held} slots, {n_head} heads of {hs} (per K head {group})",
                    listed.len()
                ),
                params,
                buffers: vec![bytes(&keys), bytemuck::cast_slice(&list).to_vec(), bytes(&flat)],
                scales: None,
                groups,
                want: vec![(0, "key_cache", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-6 },
            }
        };
    shapes.map(case).collect()
}

pub fn kv_mass_cases() -> Vec<Case> {
    // (n_head, n_rows, n_cols)
    let shapes = [(1, 1, 1), (12, 1, 63), (3, 5, 65), (2, 1, 1757), (25, 7, 33)];
    shapes
        .iter()
        .enumerate()
        .map(|(i, &(n_head, n_rows, n_cols))| {
            let seed = 80 + i as u64 * 3;
            let probs: Vec<f32> =
                random(n_head * n_rows * n_cols, seed).iter().map(|v| v.abs()).collect();
            let mass: Vec<f32> = random(n_cols, seed + 1).iter().map(|v| v.abs() * 9.0).collect();
            let mut want = mass.clone();
            kv_mass::run_cpu(&probs, n_head, n_rows, &mut want);
            // The pass's rows are the last n_rows of the n_cols slots.
            let c = config(n_head, 1, 1, 1);
            let rows = At { keys0: (n_cols - n_rows) as u32, ..at(&c, n_rows) };
            let (params, groups) = launch(&kv_mass::Shape, &rows, Format::F32);
            // A slot past n_cols must keep its total: the buffer holds one more.
            let mut buffer = mass.clone();
            buffer.push(7.5);
            want.push(7.5);
            Case {
                kernel: Kernel::KvMass,
                format: Format::F32,
                shape: format!("{n_head} heads × {n_rows} rows into {n_cols} slots"),
                params,
                buffers: vec![bytes(&probs), bytes(&buffer)],
                scales: None,
                groups,
                want: vec![(1, "mass", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-6 },
            }
        })
        .collect()
}

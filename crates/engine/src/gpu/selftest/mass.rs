//! kv_mass's cases: softmax-like weights (in [0, 1]) added to running totals
//! already in the slots, at awkward sizes (one slot, 63/65 slots around a
//! workgroup, 1757 slots, many heads × rows). Tolerance: the sum of
//! n_head · n_rows terms in [0, 1] in the same order on both sides, so only
//! a fused add may differ: 1e-6 abs + 1e-6 rel.

use super::inputs::{at, bytes, config, launch, random, Case, Tolerance};
use crate::kernels::{kv_mass, At, Kernel};
use crate::storage::format::Format;

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

//! The cases of the Llama family's own kernels, in the table of
//! [`cases`](super::cases): rms_norm, rope and swiglu, at awkward sizes.
//! Tolerances: see `cases.rs`.

use super::inputs::{at, bytes, config, launch, poisoned, random, Case, Tolerance, SIZES};
use crate::kernels::{rms_norm, rope, swiglu, At, Kernel, WG};
use crate::storage::format::Format;

pub fn rms_norm_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for &n_embd in &SIZES {
        for n_rows in [1, 7] {
            let x: Vec<f32> = random(n_rows * n_embd, 90).iter().map(|v| v * 3.0 + 0.5).collect();
            let w = random(n_embd, 91);
            let c = config(1, n_embd, 1, 1);
            let mut want = poisoned(n_rows * n_embd);
            rms_norm::run_cpu(&x, &w, c.layer_norm_epsilon, &mut want);
            let (params, groups) =
                launch(&rms_norm::Shape { wg: WG }, &at(&c, n_rows), Format::F32);
            out.push(Case {
                kernel: Kernel::RmsNorm,
                format: Format::F32,
                shape: format!("{n_rows}x{n_embd}"),
                params,
                buffers: vec![bytes(&x), bytes(&w), bytes(&poisoned(n_rows * n_embd))],
                scales: None,
                groups,
                want: vec![(2, "out", want)],
                tolerance: Tolerance { atol: 1e-5, rtol: 1e-5 },
            });
        }
    }
    out
}

/// (query heads, head size, rows, first position, query heads per K/V
/// head): one pair a head, odd head counts, a pass of 65 rows, positions
/// past 1,024, and narrow K heads (one for 3, for 2).
const ROPE_SHAPES: [(usize, usize, usize, usize, usize); 5] =
    [(1, 2, 1, 0, 1), (3, 8, 5, 61, 3), (2, 64, 65, 3, 2), (9, 64, 1, 1757, 3), (1, 128, 63, 0, 1)];

pub fn rope_cases() -> Vec<Case> {
    ROPE_SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(n_head, hs, n_rows, pos0, group))| {
            let c = config(n_head, hs, group, 1);
            let heads = c.heads();
            let inv: Vec<f32> =
                (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
            // (n_positions, hs / 2): every position up to the pass's last, as the GPU holds it.
            let table = rope::turns(&inv, 0, pos0 + n_rows);
            let qkv = random(n_rows * heads.qkv_width(), 92 + i as u64);
            let mut want = qkv.clone();
            rope::run_cpu(&mut want, heads, &table[pos0 * hs / 2..]);
            let flat: Vec<f32> = table.iter().flat_map(|&(cos, sin)| [cos, sin]).collect();
            let at = At { pos0: pos0 as u32, turn0: pos0 as u32, ..at(&c, n_rows) };
            let (params, groups) = launch(&rope::Shape, &at, Format::F32);
            Case {
                kernel: Kernel::Rope,
                format: Format::F32,
                shape: format!(
                    "{n_rows} rows of {n_head} heads of {hs} (per K head {group}) from position {pos0}"
                ),
                params,
                buffers: vec![bytes(&qkv), bytes(&flat)],
                scales: None,
                groups,
                want: vec![(0, "qkv", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-6 },
            }
        })
        .collect()
}

pub fn swiglu_cases() -> Vec<Case> {
    // Gates over [-8, 8] (both tails and the bend); then extremes, where
    // e^-g overflows.
    let mut inputs: Vec<(usize, Vec<f32>)> = SIZES
        .iter()
        .flat_map(|&n| {
            [1, 3].map(|rows| (n, random(2 * rows * n, 93).iter().map(|v| v * 8.0).collect()))
        })
        .collect();
    inputs.push((5, vec![1e4, 1.0, -1e4, 1.0, 80.0, 1.0, -80.0, 1.0, 0.0, 1.0])); // gate, up in turn
    inputs
        .into_iter()
        .map(|(n_inner, gate_up)| {
            let n_rows = gate_up.len() / (2 * n_inner);
            let mut want = poisoned(n_rows * n_inner);
            swiglu::run_cpu(&gate_up, &mut want);
            let c = config(1, 1, 1, 1);
            let shape = swiglu::Shape { n_inner: n_inner as u32 };
            let (params, groups) = launch(&shape, &at(&c, n_rows), Format::F32);
            Case {
                kernel: Kernel::Swiglu,
                format: Format::F32,
                shape: format!("{n_rows}x{n_inner}"),
                params,
                buffers: vec![bytes(&gate_up), bytes(&poisoned(n_rows * n_inner))],
                scales: None,
                groups,
                want: vec![(1, "out", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-5 },
            }
        })
        .collect()
}

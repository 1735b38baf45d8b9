//! The cases of the Llama family's fused decode kernels (rms_qkv,
//! rms_swiglu and their split shapes), in the table of
//! [`cases`](super::cases). Their twins are the unfused twins in a row
//! (rms_norm, matmul, then rope and kv_write, or swiglu), so these cases also
//! check that fusing changed nothing but rounding. Tolerances: a K-term dot
//! of RMSNorm outputs as `fused`'s LayerNorm ones (`ln_dot`); a turn mixes two
//! such sums with weights under 1 (twice the tolerance); SwiGLU multiplies a
//! sum's error by at most 1.1 · |up| + |silu(gate)| and adds swiglu's own
//! 1e-6 abs + 1e-5 rel.

use super::fused::{ln_dot, wide, x_rows};
use super::inputs::{at, bytes, config, launch, poisoned, random, weights, Case, Tolerance};
use crate::kernels::{rms_qkv, rms_qkv_split, rms_swiglu, rms_swiglu_split, rope};
use crate::kernels::{At, Heads, Kernel, Split};
use crate::storage::format::{Channels, Format};

/// The cases' RMSNorm epsilon: the cases' config's (`inputs::config`).
const EPS: f32 = 1e-5;

/// A residual-stream row (not centred: RMSNorm keeps the mean) and a norm's weight.
fn rms_inputs(n_embd: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    (random(n_embd, seed).iter().map(|v| v * 3.0 + 0.5).collect(), random(n_embd, seed + 1))
}

/// (query heads, head size, query heads per K/V head, position, cache
/// slot, slots): one pair, 66 columns across a 64-wide workgroup, three
/// heads sharing one, a position past 1,757 in an evicted slot. (No
/// model-sized row: the page's self-test runs this table on SwiftShader
/// under WebGPU's default limits, in every format.)
const QKV_SHAPES: [(usize, usize, usize, usize, usize, usize); 5] = [
    (1, 2, 1, 0, 0, 1),
    (1, 22, 1, 5, 5, 8),
    (9, 8, 3, 61, 61, 64),
    (5, 26, 5, 9, 2, 12),
    (2, 64, 2, 1760, 3, 4),
];

/// The cases of rms_qkv, or with a split layout, of rms_qkv_split.
pub fn rms_qkv_cases(format: Format, split: Option<Split>) -> Vec<Case> {
    QKV_SHAPES.iter().enumerate().map(|(i, &shape)| rms_qkv_case(format, split, shape, i)).collect()
}

fn rms_qkv_case(
    format: Format,
    split: Option<Split>,
    (n_head, hs, group, pos, slot, slots): (usize, usize, usize, usize, usize, usize),
    i: usize,
) -> Case {
    let heads = Heads { n_embd: n_head * hs, head_size: hs, group };
    let (e, kv_dim, seed) = (heads.n_embd, heads.kv_dim(), 300 + 10 * i as u64);
    let (x, lw) = rms_inputs(e, seed);
    let width = heads.qkv_width();
    let (w, words, scales) = weights(format, (e, width), Channels::Cols, seed + 3);
    let bias = random(width, seed + 4);
    let inv: Vec<f32> = (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
    let table = rope::turns(&inv, 0, pos + 1); // (pos + 1, hs / 2), as the GPU holds it
    let (k0, v0) = (random(slots * kv_dim, seed + 5), random(slots * kv_dim, seed + 6));
    let (mut kc, mut vc, mut qkv) = (k0.clone(), v0.clone(), poisoned(width));
    let turn = &table[pos * hs / 2..];
    rms_qkv::run_cpu(&x, &lw, EPS, &w, &bias, heads, turn, slot, &mut qkv, &mut kc, &mut vc);
    let c = config(n_head, hs, group, 1);
    let row = At { slot0: slot as u32, pos0: pos as u32, turn0: pos as u32, ..at(&c, 1) };
    let (kernel, (params, groups)) = match split {
        None => (Kernel::RmsQkv, launch(&rms_qkv::Shape, &row, format)),
        Some(split) => (Kernel::RmsQkvSplit, launch(&rms_qkv_split::Shape { split }, &row, format)),
    };
    let flat: Vec<f32> = table.iter().flat_map(|&(cos, sin)| [cos, sin]).collect();
    let dot = ln_dot(&rms_qkv::normalised(&x, &lw, EPS));
    Case {
        kernel,
        format,
        shape: format!(
            "{n_head} heads of {hs} (per K/V head {group}) at position {pos}, slot {slot} of {slots}{}",
            wide(split)
        ),
        params,
        buffers: vec![
            x_rows(&x, groups),
            bytes(&[lw, bias].concat()),
            words,
            bytes(&poisoned(width)),
            bytes(&k0),
            bytes(&v0),
            bytes(&flat),
        ],
        scales,
        groups,
        want: vec![(3, "qkv", qkv), (4, "keys", kc), (5, "values", vc)],
        tolerance: Tolerance { atol: 2.0 * dot.atol, rtol: 2.0 * dot.rtol },
    }
}

/// The cases of rms_swiglu, or with a split layout, of rms_swiglu_split.
pub fn rms_swiglu_cases(format: Format, split: Option<Split>) -> Vec<Case> {
    let shapes = [(1, 1), (63, 65), (64, 1757), (65, 32), (200, 63)];
    let mut out = Vec::new();
    for (i, &(e, n)) in shapes.iter().enumerate() {
        let seed = 400 + 10 * i as u64;
        let (x, lw) = rms_inputs(e, seed);
        let (w, words, scales) = weights(format, (e, 2 * n), Channels::Cols, seed + 3);
        let bias = random(2 * n, seed + 4);
        let mut act = poisoned(n);
        rms_swiglu::run_cpu(&x, &lw, EPS, &w, &bias, &mut act);
        let c = config(1, e, 1, 1);
        let (row, n32) = (at(&c, 1), n as u32);
        let (kernel, (params, groups)) = match split {
            None => (Kernel::RmsSwiglu, launch(&rms_swiglu::Shape { n: n32 }, &row, format)),
            Some(split) => {
                let shape = rms_swiglu_split::Shape { n: n32, split };
                (Kernel::RmsSwigluSplit, launch(&shape, &row, format))
            }
        };
        let xn = rms_qkv::normalised(&x, &lw, EPS);
        let dot = ln_dot(&xn);
        // The largest gate or up: a bound on what a sum's error is multiplied by.
        let mut gate_up = vec![0.0; 2 * n];
        crate::kernels::matmul::run_cpu(&xn, &w, &bias, &mut gate_up);
        let largest = gate_up.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        out.push(Case {
            kernel,
            format,
            shape: format!("{e} → 2 × {n}{}", wide(split)),
            params,
            buffers: vec![
                x_rows(&x, groups),
                bytes(&[lw, bias].concat()),
                words,
                bytes(&poisoned(n)),
            ],
            scales,
            groups,
            want: vec![(3, "act", act)],
            tolerance: Tolerance { atol: 2.2 * largest * dot.atol + 1e-6, rtol: 1e-5 },
        });
    }
    out
}

//! The cases of decode's fused kernels (ln_qkv, matvec_residual,
//! ln_fc_gelu), in the table of [`cases`](super::cases). Their twins are the
//! unfused twins in a row, so these cases also check that fusing changed
//! nothing but rounding. Tolerance of a kernel that starts with a LayerNorm:
//! the GPU's tree-summed mean and variance move each normalised input `xn` by
//! about an ulp of itself, and the dot of K of them (weights in [-1, 1]) then
//! by up to K · ε · max|xn|, on top of the summation-order gap; GELU's slope
//! is under 1.13 and its tanh adds gelu's own 1e-6 abs + 1e-5 rel.

use super::inputs::{at, bytes, config, dot, launch, poisoned, random, weights, Case, Tolerance};
use crate::kernels::{ln_fc_gelu, ln_fc_gelu_split, ln_qkv, ln_qkv_split, matvec_residual};
use crate::kernels::{matvec_residual_split, At, Heads, Kernel, Split};
use crate::storage::format::{Channels, Format};

/// A residual-stream row with a non-zero mean, and a LayerNorm's weight and bias.
fn ln_inputs(n_embd: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = random(n_embd, seed).iter().map(|v| v * 3.0 + 0.5).collect();
    (x, random(n_embd, seed + 1), random(n_embd, seed + 2))
}

/// The tolerance of a K-term dot product of LayerNorm outputs `xn`.
pub(super) fn ln_dot(xn: &[f32]) -> Tolerance {
    let k = xn.len() as f32;
    let largest = xn.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    Tolerance { atol: (largest + 1.0) * k * f32::EPSILON, rtol: 1e-5 }
}

/// x as a fused decode kernel binds it: the token's row, then a poisoned
/// row per workgroup (`groups`), where the cpu profile's kernels keep their
/// normalised copy (shaders/row_in_x.wgsl) and must write it before reading
/// it; the split kernels read the first row only.
pub(super) fn x_rows(x: &[f32], groups: [u32; 3]) -> Vec<u8> {
    bytes(&[x, &poisoned(x.len() * groups[0] as usize)].concat())
}

/// LayerNorm's epsilon: the cases' config's (`inputs::config`).
const EPS: f32 = 1e-5;

/// The bindings a fused LayerNorm kernel starts with: x ([`x_rows`]), the LayerNorm's
/// weight and bias in one buffer, the weight words, the bias, and its
/// output of `n` values poisoned.
fn ln_buffers(
    x: Vec<u8>,
    ln_weight: &[f32],
    ln_bias: &[f32],
    words: Vec<u8>,
    bias: &[f32],
    n: usize,
) -> Vec<Vec<u8>> {
    let ln = [ln_weight, ln_bias].concat();
    vec![x, bytes(&ln), words, bytes(bias), bytes(&poisoned(n))]
}

/// The cases of ln_qkv, or with a split layout, of ln_qkv_split: the same
/// inputs and twin, the real GPUs' shape adding a GPT-2-sized row.
pub fn ln_qkv_cases(format: Format, split: Option<Split>) -> Vec<Case> {
    let mut out = Vec::new();
    // (n_embd, pos, n_positions, head_size, group): rows before and after
    // `pos` must survive; K/V heads each its own, one for 3, shared by 2, by 5, by 4.
    let shapes = [
        (1, 0, 1, 1, 1),
        (63, 5, 8, 21, 3),
        (64, 0, 2, 16, 2),
        (65, 3, 4, 13, 1),
        (200, 9, 12, 40, 5),
        (768, 1, 3, 64, 4),
    ];
    let shapes = &shapes[..shapes.len() - usize::from(split.is_none())];
    for (i, &(n_embd, pos, n_positions, hs, group)) in shapes.iter().enumerate() {
        let heads = Heads { n_embd, head_size: hs, group };
        let kv_dim = heads.kv_dim();
        let seed = 200 + 10 * i as u64;
        let (x, lw, lb) = ln_inputs(n_embd, seed);
        let width = heads.qkv_width();
        let (w, words, scales) = weights(format, (n_embd, width), Channels::Cols, seed + 3);
        let bias = random(width, seed + 4);
        let (k0, v0) =
            (random(n_positions * kv_dim, seed + 5), random(n_positions * kv_dim, seed + 6));
        let (mut kc, mut vc, mut qkv) = (k0.clone(), v0.clone(), poisoned(width));
        ln_qkv::run_cpu(&x, &lw, &lb, EPS, &w, &bias, heads, pos, &mut qkv, &mut kc, &mut vc);
        let c = config(n_embd / hs, hs, group, 1);
        let row = At { slot0: pos as u32, ..at(&c, 1) };
        let (kernel, (params, groups)) = match split {
            None => (Kernel::LnQkv, launch(&ln_qkv::Shape, &row, format)),
            Some(split) => {
                (Kernel::LnQkvSplit, launch(&ln_qkv_split::Shape { split }, &row, format))
            }
        };
        out.push(Case {
            kernel,
            format,
            shape: format!(
                "n_embd {n_embd} (K/V heads of {hs} per {group}) at {pos} of {n_positions}{}",
                wide(split)
            ),
            params,
            buffers: [
                ln_buffers(x_rows(&x, groups), &lw, &lb, words, &bias, width),
                vec![bytes(&k0), bytes(&v0)],
            ]
            .concat(),
            scales,
            groups,
            want: vec![(4, "qkv", qkv), (5, "keys", kc), (6, "values", vc)],
            tolerance: ln_dot(&ln_qkv::normalised(&x, &lw, &lb, EPS)),
        });
    }
    out
}

/// The cases of matvec_residual, or with a split layout of its split shape
/// (adding GPT-2's MLP projection, k = 3072).
pub fn matvec_residual_cases(format: Format, split: Option<Split>) -> Vec<Case> {
    let shapes = [(1, 1), (63, 65), (1757, 64), (64, 1757), (65, 63), (48, 144), (3072, 768)];
    let shapes = &shapes[..shapes.len() - usize::from(split.is_none())];
    let mut out = Vec::new();
    for (i, &(k, n)) in shapes.iter().enumerate() {
        let (y, b, x) = (random(k, 40 + i as u64), random(n, 60), random(n, 61));
        let (w, words, scales) = weights(format, (k, n), Channels::Cols, 50 + i as u64);
        let mut want = x.clone();
        matvec_residual::run_cpu(&y, &w, &b, &mut want);
        let c = config(1, 1, 1, 1);
        let (row, k32, n32) = (at(&c, 1), k as u32, n as u32);
        let (kernel, (params, groups)) = match split {
            None => (
                Kernel::MatvecResidual,
                launch(&matvec_residual::Shape { k: k32, n: n32 }, &row, format),
            ),
            Some(split) => {
                let shape = matvec_residual_split::Shape { k: k32, n: n32, split };
                (Kernel::MatvecResidualSplit, launch(&shape, &row, format))
            }
        };
        out.push(Case {
            kernel,
            format,
            shape: format!("{k}x{n}{}", wide(split)),
            params,
            buffers: vec![bytes(&y), words, bytes(&b), bytes(&x)],
            scales,
            groups,
            want: vec![(3, "x", want)],
            // x in [-1, 1] is added after the dot: one more rounding.
            tolerance: dot(k + 1),
        });
    }
    out
}

/// The cases of ln_fc_gelu, or with a split layout of its split shape
/// (adding GPT-2's c_fc, 768 → 3072).
pub fn ln_fc_gelu_cases(format: Format, split: Option<Split>) -> Vec<Case> {
    let shapes = [(1, 1), (63, 65), (1757, 64), (64, 1757), (65, 63), (48, 192), (768, 3072)];
    let shapes = &shapes[..shapes.len() - usize::from(split.is_none())];
    let mut out = Vec::new();
    for (i, &(n_embd, n)) in shapes.iter().enumerate() {
        let seed = 300 + 10 * i as u64;
        let (x, lw, lb) = ln_inputs(n_embd, seed);
        let (w, words, scales) = weights(format, (n_embd, n), Channels::Cols, seed + 3);
        let bias = random(n, seed + 4);
        let mut want = poisoned(n);
        ln_fc_gelu::run_cpu(&x, &lw, &lb, EPS, &w, &bias, &mut want);
        let c = config(1, n_embd, 1, 1);
        let t = ln_dot(&ln_qkv::normalised(&x, &lw, &lb, EPS));
        let (row, n32) = (at(&c, 1), n as u32);
        let (kernel, (params, groups)) = match split {
            None => (Kernel::LnFcGelu, launch(&ln_fc_gelu::Shape { n: n32 }, &row, format)),
            Some(split) => {
                let shape = ln_fc_gelu_split::Shape { n: n32, split };
                (Kernel::LnFcGeluSplit, launch(&shape, &row, format))
            }
        };
        out.push(Case {
            kernel,
            format,
            shape: format!("{n_embd}x{n}{}", wide(split)),
            params,
            buffers: ln_buffers(x_rows(&x, groups), &lw, &lb, words, &bias, n),
            scales,
            groups,
            want: vec![(4, "fc", want)],
            tolerance: Tolerance { atol: 1.13 * t.atol + 1e-6, rtol: t.rtol + 1e-5 },
        });
    }
    out
}

/// How a split case names its layout in the report (nothing for the cpu profile's kernels).
pub(super) fn wide(split: Option<Split>) -> String {
    split.map_or(String::new(), |s| format!(", {} wide", s.wide))
}

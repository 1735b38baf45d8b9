//! The cases of the prefill's kernels and the LM head, in the table of
//! [`cases`](super::cases): embedding (in every format, over shards of the
//! vocabulary), layernorm, the matmuls, kv_write, residual_add, gelu and
//! lm_head. Tolerances: see `cases.rs`.

use super::inputs::{at, bytes, config, dot, launch, poisoned, random, weights, Case, Tolerance};
use super::inputs::{EXACT, SIZES};
use crate::kernels::*;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// A seeded `(vocab, n_embd)` matrix split by rows as the GPU splits the
/// embedding and LM head over bindings: the shard of rows `v0..v1` as
/// uploaded (words and scales sliced, not repacked) and the shard itself.
fn shard(
    format: Format,
    (vocab, n_embd): (usize, usize),
    (v0, v1): (usize, usize),
    seed: u64,
) -> (Matrix, Vec<u8>, Option<Vec<u8>>) {
    let (whole, _, _) = weights(format, (vocab, n_embd), Channels::Rows, seed);
    let m = whole.shard(v0, v1);
    let words = bytemuck::cast_slice(m.words()).to_vec();
    let scales = format.has_scales().then(|| bytes(m.scales()));
    (m, words, scales)
}

/// Shards of the 1757-row vocabulary the cases use: whole, and the middle
/// and last of three (rows outside a shard must be left untouched).
const VOCAB_SHARDS: [(usize, usize); 3] = [(0, 1757), (64, 1088), (1088, 1757)];

pub fn embedding_cases(format: Format) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &n_embd) in [1, 63, 65, 48].iter().enumerate() {
        for (v0, v1) in VOCAB_SHARDS {
            let (vocab, n_positions, n_rows, pos0) = (1757, 70, 5 + i, 3);
            let tokens: Vec<u32> = (0..n_rows).map(|r| ((r * 389 + 7) % vocab) as u32).collect();
            let (wte, words, scales) = shard(format, (vocab, n_embd), (v0, v1), 1);
            let wpe = random(n_positions * n_embd, 2);
            // Poisoned where this shard writes, a sentinel where it must not.
            let before: Vec<f32> = (0..n_rows * n_embd)
                .map(|j| match (v0..v1).contains(&(tokens[j / n_embd] as usize)) {
                    true => f32::NAN,
                    false => 7.0,
                })
                .collect();
            let mut want = before.clone();
            embedding::run_cpu(&tokens, &wte, v0, &wpe, pos0, &mut want);
            let c = config(1, n_embd, 1, vocab);
            let shape = embedding::Shape { v0: v0 as u32, n_vocab: (v1 - v0) as u32 };
            let (params, groups) =
                launch(&shape, &At { pos0: pos0 as u32, ..at(&c, n_rows) }, format);
            out.push(Case {
                kernel: Kernel::Embedding,
                format,
                shape: format!("{n_rows} rows of {n_embd}, vocabulary rows {v0}..{v1}"),
                params,
                buffers: vec![
                    bytemuck::cast_slice(&tokens).to_vec(),
                    words,
                    bytes(&wpe),
                    bytes(&before),
                ],
                scales,
                groups,
                want: vec![(3, "x", want)],
                tolerance: match format.has_scales() {
                    true => Tolerance { atol: 4.0 * f32::EPSILON, rtol: 0.0 },
                    false => EXACT,
                },
            });
        }
    }
    out
}

pub fn layernorm_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for &n_embd in &SIZES {
        for n_rows in [1, 7] {
            // Offset inputs: a non-zero mean is what the two-pass variance is for.
            let x: Vec<f32> = random(n_rows * n_embd, 3).iter().map(|v| v * 3.0 + 0.5).collect();
            let (w, b) = (random(n_embd, 4), random(n_embd, 5));
            let mut want = poisoned(n_rows * n_embd);
            layernorm::run_cpu(&x, &w, &b, 1e-5, &mut want); // the config's epsilon
            let c = config(1, n_embd, 1, 1);
            let shape = layernorm::Shape { wg: WG };
            let (params, groups) = launch(&shape, &at(&c, n_rows), Format::F32);
            out.push(Case {
                kernel: Kernel::Layernorm,
                format: Format::F32,
                shape: format!("{n_rows}x{n_embd}"),
                params,
                buffers: vec![
                    bytes(&x),
                    bytes(&[w, b].concat()),
                    bytes(&poisoned(n_rows * n_embd)),
                ],
                scales: None,
                groups,
                want: vec![(2, "out", want)],
                tolerance: Tolerance { atol: 1e-5, rtol: 1e-5 },
            });
        }
    }
    out
}

/// The cases of a linear layer's kernel: matmul, matmul_tiled (prefill on
/// real GPUs: blocks of 64 and tiles of 16 rows cut at awkward places) or
/// matmul_split (a batch's rows on real GPUs: at most eight).
pub fn matmul_cases(format: Format, kernel: Kernel, split: Split) -> Vec<Case> {
    let shapes =
        [(1, 1, 1), (1, 63, 65), (17, 1757, 65), (65, 64, 63), (33, 65, 1757), (64, 48, 144)];
    // matmul_split names each of its rows' sums apart (a0..a7): every count
    // of rows from one to eight but 4 and 6 gets a case.
    let split_rows = [1, 2, 3, 5, 7, matmul_split::MAX_ROWS];
    let mut out = Vec::new();
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        let m = if kernel == Kernel::MatmulSplit { split_rows[i] } else { m };
        let (x, b) = (random(m * k, 10 + i as u64), random(n, 30));
        let (w, words, scales) = weights(format, (k, n), Channels::Cols, 20 + i as u64);
        let mut want = poisoned(m * n);
        matmul::run_cpu(&x, &w, &b, &mut want);
        let c = config(1, 1, 1, 1);
        let (rows, k32, n32) = (at(&c, m), k as u32, n as u32);
        let ((params, groups), layout) = match kernel {
            Kernel::MatmulSplit => {
                let shape = matmul_split::Shape { k: k32, n: n32, split };
                (launch(&shape, &rows, format), super::fused::wide(Some(split)))
            }
            Kernel::MatmulTiled => {
                (launch(&matmul_tiled::Shape { k: k32, n: n32 }, &rows, format), String::new())
            }
            _ => (launch(&matmul::Shape { k: k32, n: n32 }, &rows, format), String::new()),
        };
        out.push(Case {
            kernel,
            format,
            shape: format!("{m}x{k}x{n}{layout}"),
            params,
            buffers: vec![bytes(&x), words, bytes(&b), bytes(&poisoned(m * n))],
            scales,
            groups,
            want: vec![(3, "out", want)],
            tolerance: dot(k),
        });
    }
    out
}

pub fn kv_write_cases() -> Vec<Case> {
    let mut out = Vec::new();
    // (n_rows, n_head, head_size, group, slot0): n_embd 1, 63 (one K/V head
    // for 3), 65, 1757 (one for 7), 64 in K/V heads of 2.
    let shapes = [
        (1, 1, 1, 1, 0),
        (5, 3, 21, 3, 2),
        (17, 5, 13, 1, 40),
        (3, 7, 251, 7, 1),
        (4, 4, 16, 2, 9),
    ];
    for (n_rows, n_head, hs, group, slot0) in shapes {
        let (n_positions, n_embd) = (64, n_head * hs);
        let heads = Heads { n_embd, head_size: hs, group };
        let kv_dim = heads.kv_dim();
        let qkv = random(n_rows * heads.qkv_width(), 90);
        // Rows outside [slot0, slot0 + n_rows) must survive untouched.
        let (mut kc, mut vc) = (random(n_positions * kv_dim, 91), random(n_positions * kv_dim, 92));
        let (k0, v0) = (kc.clone(), vc.clone());
        kv_write::run_cpu(&qkv, heads, slot0, &mut kc, &mut vc);
        let c = config(n_head, hs, group, 1);
        let rows = At { slot0: slot0 as u32, ..at(&c, n_rows) };
        let (params, groups) = launch(&kv_write::Shape, &rows, Format::F32);
        out.push(Case {
            kernel: Kernel::KvWrite,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {slot0}"
            ),
            params,
            buffers: vec![bytes(&qkv), bytes(&k0), bytes(&v0)],
            scales: None,
            groups,
            want: vec![(1, "keys", kc), (2, "values", vc)],
            tolerance: EXACT,
        });
    }
    out
}

pub fn residual_add_cases() -> Vec<Case> {
    SIZES
        .iter()
        .map(|&n| {
            let (y, x) = (random(n, 80), random(n, 81));
            let mut want = x.clone();
            residual_add::run_cpu(&y, &mut want);
            let c = config(1, 1, 1, 1);
            let shape = residual_add::Shape { cols: n as u32 };
            let (params, groups) = launch(&shape, &at(&c, 1), Format::F32);
            Case {
                kernel: Kernel::ResidualAdd,
                format: Format::F32,
                shape: format!("{n}"),
                params,
                buffers: vec![bytes(&y), bytes(&x)],
                scales: None,
                groups,
                want: vec![(1, "x", want)],
                tolerance: EXACT,
            }
        })
        .collect()
}

pub fn gelu_cases() -> Vec<Case> {
    // Spread over [-8, 8]: both tails and the curved middle; then extremes,
    // where a naive tanh overflows to NaN.
    let mut inputs: Vec<Vec<f32>> =
        SIZES.iter().map(|&n| random(n, 70).iter().map(|v| v * 8.0).collect()).collect();
    inputs.push(vec![1e4, -1e4, 80.0, -80.0, 0.0]);
    inputs
        .into_iter()
        .map(|x| {
            let mut want = x.clone();
            gelu::run_cpu(&mut want);
            let c = config(1, 1, 1, 1);
            let shape = gelu::Shape { cols: x.len() as u32 };
            let (params, groups) = launch(&shape, &at(&c, 1), Format::F32);
            Case {
                kernel: Kernel::Gelu,
                format: Format::F32,
                shape: format!("{}", x.len()),
                params,
                buffers: vec![bytes(&x)],
                scales: None,
                groups,
                want: vec![(0, "x", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-5 },
            }
        })
        .collect()
}

/// The LM head's cases, for lm_head or lm_head_split (the same `Params`;
/// the split head's workgroups take one logits row each, so its cases stop
/// at three rows: seventeen cost a software adapter seconds a format).
pub fn lm_head_cases(format: Format, kernel: Kernel) -> Vec<Case> {
    let mut out = Vec::new();
    let whole = |vocab| (0, vocab);
    let max_rows = if kernel == Kernel::LmHeadSplit { 3 } else { usize::MAX };
    for &(vocab, n_embd, n_rows, row0, n_out, (v0, v1)) in &[
        (1, 1, 1, 0, 1, whole(1)),
        (63, 65, 4, 3, 1, whole(63)),
        (1757, 48, 17, 0, 17, whole(1757)),
        (1757, 63, 3, 1, 2, VOCAB_SHARDS[1]),
        (1757, 65, 2, 0, 2, VOCAB_SHARDS[2]),
        (65, 1757, 2, 1, 1, whole(65)),
        (65, 1757, 2, 1, 1, (32, 65)),
        (64, 63, 5, 2, 3, whole(64)),
        (1757, 768, 2, 1, 1, VOCAB_SHARDS[2]),
    ] {
        if n_out > max_rows {
            continue;
        }
        let x = random(n_rows * n_embd, 130);
        let (w, words, scales) = shard(format, (vocab, n_embd), (v0, v1), 131);
        // Poisoned in this shard's columns, a sentinel in the others'.
        let before: Vec<f32> = (0..n_out * vocab)
            .map(|j| if (v0..v1).contains(&(j % vocab)) { f32::NAN } else { 7.0 })
            .collect();
        let mut want = before.clone();
        lm_head::run_cpu(&x, &w, v0, vocab, row0, n_out, &mut want);
        let c = config(1, n_embd, 1, vocab);
        let rows = At { lm_row0: row0 as u32, lm_rows: n_out as u32, ..at(&c, n_rows) };
        let (v0_32, n_vocab) = (v0 as u32, (v1 - v0) as u32);
        let (params, groups) = match kernel {
            Kernel::LmHeadSplit => {
                launch(&lm_head_split::Shape { v0: v0_32, n_vocab }, &rows, format)
            }
            _ => launch(&lm_head::Shape { v0: v0_32, n_vocab }, &rows, format),
        };
        out.push(Case {
            kernel,
            format,
            shape: format!(
                "vocab {vocab} (rows {v0}..{v1}), n_embd {n_embd}, {n_out} of {n_rows} rows"
            ),
            params,
            buffers: vec![bytes(&x), words, bytes(&before)],
            scales,
            groups,
            want: vec![(2, "logits", want)],
            tolerance: dot(n_embd),
        });
    }
    out
}

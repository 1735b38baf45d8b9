//! The cases of the attention kernels of the cpu profile (attention over
//! tiles of keys, and attention_probs, the weights the views read), in the
//! table of [`cases`](super::cases). Tolerances: see `cases.rs`.

use super::inputs::{at, attention_inputs, bytes, config, launch, poisoned, Case, Tolerance};
use crate::kernels::*;
use crate::storage::format::Format;

/// (n_rows, n_head, head_size, keys0, group): single key, one tile, tile
/// edges, three tiles, head sizes of 1, 63, 65 (two dims per thread) and the
/// maximum 256; one K/V head for 3 query heads (MQA), K/V heads of 2 (GQA).
const ATTENTION_SHAPES: [(usize, usize, usize, usize, usize); 8] = [
    (1, 1, 1, 0, 1),
    (1, 3, 16, 62, 3),
    (2, 2, 63, 63, 2),
    (17, 1, 65, 0, 1),
    (1, 2, 64, 129, 1),
    (9, 3, 7, 57, 1),
    (3, 1, 256, 61, 1),
    (5, 4, 16, 40, 2),
];

pub fn attention_probs_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(n_rows, n_head, hs, keys0, group)) in ATTENTION_SHAPES.iter().enumerate() {
        let n_embd = n_head * hs;
        let (qkv, kc, _, scale) = attention_inputs(i, (n_rows, n_head, hs, keys0), group);
        let n_cols = keys0 + n_rows;
        let mut want = poisoned(n_head * n_rows * n_cols);
        let heads = Heads { n_embd, head_size: hs, group };
        attention_probs::run_cpu(&qkv, &kc, heads, keys0, scale, &mut want);
        let c = config(n_head, hs, group, 1);
        let rows = At { keys0: keys0 as u32, ..at(&c, n_rows) };
        let (params, groups) = launch(&attention_probs::Shape { scale }, &rows, Format::F32);
        out.push(Case {
            kernel: Kernel::AttentionProbs,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {keys0}"
            ),
            params,
            buffers: vec![bytes(&qkv), bytes(&kc), bytes(&poisoned(n_head * n_rows * n_cols))],
            scales: None,
            groups,
            want: vec![(2, "probs", want)],
            // Weights in [0, 1]: the scores' rounding (pre-scaled q on the GPU) through exp.
            tolerance: Tolerance { atol: 1e-6, rtol: 1e-4 },
        });
    }
    out
}

pub fn attention_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(n_rows, n_head, hs, keys0, group)) in ATTENTION_SHAPES.iter().enumerate() {
        let n_embd = n_head * hs;
        let (qkv, kc, vc, scale) = attention_inputs(i, (n_rows, n_head, hs, keys0), group);
        let mut want = poisoned(n_rows * n_embd);
        let heads = Heads { n_embd, head_size: hs, group };
        attention::run_cpu(&qkv, &kc, &vc, heads, keys0, scale, &mut want);
        let c = config(n_head, hs, group, 1);
        let rows = At { keys0: keys0 as u32, ..at(&c, n_rows) };
        let (params, groups) = launch(&attention::Shape { scale }, &rows, Format::F32);
        out.push(Case {
            kernel: Kernel::Attention,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {keys0}"
            ),
            params,
            buffers: vec![bytes(&qkv), bytes(&kc), bytes(&vc), bytes(&poisoned(n_rows * n_embd))],
            scales: None,
            groups,
            want: vec![(3, "y", want)],
            tolerance: Tolerance { atol: 1e-5, rtol: 1e-4 },
        });
    }
    out
}

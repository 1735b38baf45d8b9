//! The cases of a batched decode step's per-sequence dispatches: embedding,
//! kv_write and attention with `row0 > 0`, each working on one row of a
//! batch's shared buffers over that sequence's own position and cache. The
//! twin is called on the rows themselves (the shader's `row0` is slicing);
//! every other row of the output carries a sentinel that must survive.
//! Tolerances are the kernels' own (see [`cases`](super::cases)).

use super::inputs::{at, attention_inputs, bytes, config, launch, random, Case, Tolerance, EXACT};
use crate::kernels::{attention, embedding, kv_write, At, Heads, Kernel};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// (batch rows, the row the dispatch works on): first, middle and last of odd batches.
const ROWS: [(usize, usize); 3] = [(3, 1), (8, 7), (5, 0)];

/// Outside `row0..row0 + n` a sentinel, inside NaN: the rows a dispatch must
/// leave alone, and the ones it must write.
fn sentinel_outside(len_rows: usize, cols: usize, row0: usize, n: usize) -> Vec<f32> {
    (0..len_rows * cols)
        .map(|i| match (row0..row0 + n).contains(&(i / cols)) {
            true => f32::NAN,
            false => 7.0,
        })
        .collect()
}

pub fn embedding_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(batch, row0)) in ROWS.iter().enumerate() {
        let (n_embd, vocab, n_positions, pos) = ([1, 63, 65][i], 1757, 70, [0, 69, 31][i]);
        let tokens: Vec<u32> = (0..batch).map(|r| ((r * 389 + 7) % vocab) as u32).collect();
        let wte =
            Matrix::new(Format::F32, vocab, n_embd, Channels::Rows, &random(vocab * n_embd, 1));
        let wpe = random(n_positions * n_embd, 2);
        let before = sentinel_outside(batch, n_embd, row0, 1);
        let mut want = before.clone();
        let x = &mut want[row0 * n_embd..][..n_embd];
        embedding::run_cpu(&tokens[row0..row0 + 1], &wte, 0, &wpe, pos, x);
        let c = config(1, n_embd, 1, vocab);
        let row = At { pos0: pos as u32, row0: row0 as u32, ..at(&c, 1) };
        let shape = embedding::Shape { v0: 0, n_vocab: vocab as u32 };
        let (params, groups) = launch(&shape, &row, Format::F32);
        let words = bytemuck::cast_slice(wte.words()).to_vec();
        out.push(Case {
            kernel: Kernel::Embedding,
            format: Format::F32,
            shape: format!("row {row0} of {batch}, {n_embd} dims, at {pos}"),
            params,
            buffers: vec![
                bytemuck::cast_slice(&tokens).to_vec(),
                words,
                bytes(&wpe),
                bytes(&before),
            ],
            scales: None,
            groups,
            want: vec![(3, "x", want)],
            tolerance: EXACT,
        });
    }
    out
}

pub fn kv_write_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(batch, row0)) in ROWS.iter().enumerate() {
        let (n_embd, n_positions, pos) = ([1, 63, 65][i], 64, [0, 63, 17][i]);
        let qkv = random(batch * 3 * n_embd, 93);
        let (mut kc, mut vc) = (random(n_positions * n_embd, 94), random(n_positions * n_embd, 95));
        let (k0, v0) = (kc.clone(), vc.clone());
        let heads = Heads::each(n_embd, n_embd);
        kv_write::run_cpu(&qkv[row0 * 3 * n_embd..][..3 * n_embd], heads, pos, &mut kc, &mut vc);
        let c = config(1, n_embd, 1, 1);
        let row = At { slot0: pos as u32, row0: row0 as u32, ..at(&c, 1) };
        let (params, groups) = launch(&kv_write::Shape, &row, Format::F32);
        out.push(Case {
            kernel: Kernel::KvWrite,
            format: Format::F32,
            shape: format!("row {row0} of {batch}, {n_embd} dims, at {pos}"),
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

pub fn attention_cases() -> Vec<Case> {
    let mut out = Vec::new();
    // (n_head, head_size, pos, group): one key, two tiles, a 65-wide head
    // whose three query heads share one K/V head.
    let heads = [(1, 1, 0, 1), (2, 63, 70, 1), (3, 65, 5, 3)];
    for (i, (&(batch, row0), &(n_head, hs, pos, group))) in ROWS.iter().zip(&heads).enumerate() {
        let n_embd = n_head * hs;
        // The sequence's own row (and keys up to `pos`) as one pass makes them.
        let (row_qkv, kc, vc, scale) = attention_inputs(20 + i, (1, n_head, hs, pos), group);
        let width = row_qkv.len(); // n_embd + 2 · kv_dim
        let mut qkv = random(batch * width, 130 + i as u64);
        qkv[row0 * width..][..width].copy_from_slice(&row_qkv);
        let before = sentinel_outside(batch, n_embd, row0, 1);
        let mut want = before.clone();
        let y = &mut want[row0 * n_embd..][..n_embd];
        attention::run_cpu(
            &row_qkv,
            &kc,
            &vc,
            Heads { n_embd, head_size: hs, group },
            pos,
            scale,
            y,
        );
        let c = config(n_head, hs, group, 1);
        let row = At { keys0: pos as u32, row0: row0 as u32, ..at(&c, 1) };
        let (params, groups) = launch(&attention::Shape { scale }, &row, Format::F32);
        out.push(Case {
            kernel: Kernel::Attention,
            format: Format::F32,
            shape: format!("row {row0} of {batch}, {n_head} heads of {hs}, at {pos}"),
            params,
            buffers: vec![bytes(&qkv), bytes(&kc), bytes(&vc), bytes(&before)],
            scales: None,
            groups,
            want: vec![(3, "y", want)],
            tolerance: Tolerance { atol: 1e-5, rtol: 1e-4 },
        });
    }
    out
}

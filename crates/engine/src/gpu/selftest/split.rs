//! The cases of the gpu profile's flash-decoding attention (attention_split,
//! attention_combine) and of the device probe's block_sum, in the table of
//! [`cases`](super::cases). attention_split's twin writes each chunk's
//! softmax partials and attention_combine's merges them; the two together are
//! attention's twin (checked in `kernels::attention_combine`'s tests).
//! Tolerances: the partials and the merged output as attention's own, 1e-5
//! abs + 1e-4 rel (the scores' and exponentials' rounding); block_sum exact
//! (wrapping integer adds).

use super::inputs::weights;
use super::inputs::{at, attention_inputs, bytes, config, dot, launch, params, poisoned, random};
use super::inputs::{Case, Tolerance, EXACT};
use crate::kernels::{argmax, attention_combine, attention_proj_split, attention_split, block_sum};
use crate::kernels::{At, Heads, Kernel, Split};
use crate::storage::format::{Channels, Format};

/// (n_head, head_size, pos, batch rows, the query's row, group): one key, a
/// chunk edge either side, the largest head, many chunks; a batch's middle
/// row; three query heads on one K/V head, two on one.
const SHAPES: [(usize, usize, usize, usize, usize, usize); 8] = [
    (1, 1, 0, 1, 0, 1),
    (3, 16, 62, 1, 0, 3),
    (2, 63, 63, 1, 0, 1),
    (1, 65, 64, 1, 0, 1),
    (2, 64, 129, 1, 0, 2),
    (3, 7, 57, 3, 1, 1),
    (1, 256, 61, 1, 0, 1),
    (2, 64, 1000, 1, 0, 1),
];

const ATTENTION: Tolerance = Tolerance { atol: 1e-5, rtol: 1e-4 };

/// Case `i`'s query rows, caches and scale, and the partials the twin writes.
fn split_inputs(i: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>, f32, Vec<f32>) {
    let (n_head, hs, pos, batch, row0, group) = SHAPES[i];
    let n_embd = n_head * hs;
    let (row, kc, vc, scale) = attention_inputs(40 + i, (1, n_head, hs, pos), group);
    let width = row.len(); // n_embd + 2 · kv_dim
    let mut qkv = random(batch * width, 150 + i as u64);
    qkv[row0 * width..][..width].copy_from_slice(&row);
    let mut parts = poisoned(attention_split::chunks(pos) * n_head * attention_split::part_len(hs));
    let heads = Heads { n_embd, head_size: hs, group };
    attention_split::run_cpu(&row, &kc, &vc, heads, pos, scale, &mut parts);
    (qkv, kc, vc, scale, parts)
}

pub fn attention_split_cases() -> Vec<Case> {
    (0..SHAPES.len())
        .map(|i| {
            let (n_head, hs, pos, batch, row0, group) = SHAPES[i];
            let (qkv, kc, vc, scale, parts) = split_inputs(i);
            let c = config(n_head, hs, group, 1);
            let query = At { keys0: pos as u32, row0: row0 as u32, ..at(&c, 1) };
            let (params, groups) = launch(&attention_split::Shape { scale }, &query, Format::F32);
            Case {
                kernel: Kernel::AttentionSplit,
                format: Format::F32,
                shape: format!("row {row0} of {batch}, {n_head} heads of {hs}, at {pos}"),
                params,
                buffers: vec![bytes(&qkv), bytes(&kc), bytes(&vc), bytes(&poisoned(parts.len()))],
                scales: None,
                groups,
                want: vec![(3, "parts", parts)],
                tolerance: ATTENTION,
            }
        })
        .collect()
}

pub fn attention_combine_cases() -> Vec<Case> {
    (0..SHAPES.len())
        .map(|i| {
            let (n_head, hs, pos, batch, row0, _) = SHAPES[i];
            let n_embd = n_head * hs;
            let (_, _, _, _, parts) = split_inputs(i);
            // Poisoned in the query's row, a sentinel in the batch's others.
            let before: Vec<f32> = (0..batch * n_embd)
                .map(|j| if j / n_embd == row0 { f32::NAN } else { 7.0 })
                .collect();
            let mut want = before.clone();
            let y = &mut want[row0 * n_embd..][..n_embd];
            attention_combine::run_cpu(&parts, n_embd, hs, pos, y);
            let c = config(n_head, hs, 1, 1);
            let query = At { keys0: pos as u32, row0: row0 as u32, ..at(&c, 1) };
            let (params, groups) = launch(&attention_combine::Shape, &query, Format::F32);
            Case {
                kernel: Kernel::AttentionCombine,
                format: Format::F32,
                shape: format!("row {row0} of {batch}, {n_head} heads of {hs}, at {pos}"),
                params,
                buffers: vec![bytes(&parts), bytes(&before)],
                scales: None,
                groups,
                want: vec![(1, "y", want)],
                tolerance: ATTENTION,
            }
        })
        .collect()
}

/// attention_proj_split: the shapes of one query row above (a single
/// session's decode), and GPT-2 124M's 12 heads of 64 at 100 — the partials
/// merged and projected. Its tolerance: the merged row's (attention's) error
/// carried through a dot product of n_embd terms (at most ~3 standard
/// deviations of √k independent errors), on top of the dot's own rounding.
pub fn attention_proj_split_cases(format: Format, split: Split) -> Vec<Case> {
    let single = (0..SHAPES.len()).filter(|&i| SHAPES[i].3 == 1).map(|i| (i, SHAPES[i]));
    let gpt2 = std::iter::once((SHAPES.len(), (12, 64, 100, 1, 0, 1)));
    single
        .chain(gpt2)
        .map(|(i, (n_head, hs, pos, _, _, group))| {
            let n_embd = n_head * hs;
            let (row, kc, vc, scale) = attention_inputs(40 + i, (1, n_head, hs, pos), group);
            let mut parts =
                poisoned(attention_split::chunks(pos) * n_head * attention_split::part_len(hs));
            let heads = Heads { n_embd, head_size: hs, group };
            attention_split::run_cpu(&row, &kc, &vc, heads, pos, scale, &mut parts);
            let (w, words, scales) =
                weights(format, (n_embd, n_embd), Channels::Cols, 600 + i as u64);
            let (b, x) = (random(n_embd, 620 + i as u64), random(n_embd, 640 + i as u64));
            let mut want = x.clone();
            attention_proj_split::run_cpu(&parts, hs, pos, &w, &b, &mut want);
            let c = config(n_head, hs, group, 1);
            let query = At { keys0: pos as u32, ..at(&c, 1) };
            let (params, groups) = launch(&attention_proj_split::Shape { split }, &query, format);
            let dot = dot(n_embd + 1);
            let merged = 3.0 * (n_embd as f32).sqrt() * (ATTENTION.atol + ATTENTION.rtol);
            Case {
                kernel: Kernel::AttentionProjSplit,
                format,
                shape: format!(
                    "{n_head} heads of {hs} at {pos}{}",
                    super::fused::wide(Some(split))
                ),
                params,
                buffers: vec![bytes(&parts), words, bytes(&b), bytes(&x)],
                scales,
                groups,
                want: vec![(3, "x", want)],
                tolerance: Tolerance { atol: dot.atol + merged, rtol: dot.rtol },
            }
        })
        .collect()
}

/// argmax over rows of 1, 63, 1,025, 1,757 and 50,257 logits (GPT-2's),
/// the row the second of two: ties, NaNs, infinities, and a block of NaNs
/// alone. Exact: indices and value bits.
pub fn argmax_cases() -> Vec<Case> {
    [1usize, 63, 1025, 1757, 50257]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut row = random(n, 700 + i as u64);
            let nan = f32::NAN;
            // A tie for the top late in the row, a NaN and an infinity ahead of it,
            // and a whole block of NaNs where the row is long enough.
            if n > 1 {
                let top = row.iter().copied().fold(f32::MIN, f32::max) + 1.0;
                row[n - 1] = top;
                row[n / 2] = top;
                row[n / 3] = nan;
                row[0] = f32::NEG_INFINITY;
            }
            if n > 2 * argmax::PER_GROUP as usize {
                row[argmax::PER_GROUP as usize..2 * argmax::PER_GROUP as usize].fill(nan);
            }
            let buffer = [random(n, 720 + i as u64), row.clone()].concat();
            // (candidates) of the row: one a workgroup.
            let candidates = argmax::Shape::groups(n as u32);
            let mut best = vec![[0u32; 2]; candidates as usize];
            argmax::run_cpu(&row, argmax::PER_GROUP as usize, &mut best);
            let want: Vec<f32> = best.iter().flatten().map(|&b| f32::from_bits(b)).collect();
            // The second of two rows of logits.
            let c = config(1, 1, 1, n);
            let (params, groups) =
                launch(&argmax::Shape, &At { lm_rows: 2, ..at(&c, 2) }, Format::F32);
            Case {
                kernel: Kernel::Argmax,
                format: Format::F32,
                shape: format!("row 2 of 2 rows of {n}"),
                params,
                buffers: vec![bytes(&buffer), vec![0xee; 8 * candidates as usize]],
                scales: None,
                groups,
                want: vec![(1, "best", want)],
                tolerance: EXACT,
            }
        })
        .collect()
}

/// Blocks of 1, 255, 256 and 1757 words; the last block short. Values below
/// 2¹⁰ keep every sum under 2²³, so read back as f32 bits it is an exact,
/// finite (subnormal) number.
pub fn block_sum_cases() -> Vec<Case> {
    [(1, 1), (300, 255), (1024, 256), (4000, 1757)]
        .iter()
        .enumerate()
        .map(|(i, &(n, per_group))| {
            let data: Vec<u32> =
                random(4 * n, 170 + i as u64).iter().map(|v| (v.abs() * 1000.0) as u32).collect();
            let shape = block_sum::Shape { words: n as u32, per_group: per_group as u32 };
            let groups = shape.workgroups();
            let mut sums = vec![0u32; groups[0] as usize];
            block_sum::run_cpu(&data, per_group, &mut sums);
            let want = sums.iter().map(|&s| f32::from_bits(s)).collect();
            Case {
                kernel: Kernel::BlockSum,
                format: Format::F32,
                shape: format!("{n} words in blocks of {per_group}"),
                params: params(&shape.params()),
                buffers: vec![
                    bytemuck::cast_slice(&data).to_vec(),
                    vec![0xff; 4 * groups[0] as usize],
                ],
                scales: None,
                groups,
                want: vec![(1, "sums", want)],
                tolerance: EXACT,
            }
        })
        .collect()
}

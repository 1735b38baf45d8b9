//! The kernel checks: every WGSL kernel on seeded inputs at awkward sizes (1,
//! 63, 64, 65, 1757, odd model dims), with the CPU twin's answer and the
//! tolerance it must meet. One table, run by the native tests
//! (`tests/kernels.rs`, on lavapipe) and by the page's `?selftest=1` (on the
//! visitor's adapter). Outputs start as NaN, so an element a kernel fails to
//! write fails the check. Tolerances, per op:
//! - embedding, kv_write, residual_add: exact (copies and a single f32 add are
//!   correctly rounded on both sides);
//! - gelu: 1e-6 abs + 1e-5 rel (the driver's tanh is not the CPU's);
//! - layernorm: 1e-5 abs + 1e-5 rel (tree vs sequential reductions);
//! - matmul, matvec_residual, lm_head: K·ε abs + 1e-5 rel for inputs in
//!   [-1, 1]: the worst-case rounding gap between two summation orders of K
//!   products;
//! - ln_qkv, ln_fc_gelu: see `fused` (the LayerNorm's rounding scaled up by the dot);
//! - attention: 1e-5 abs + 1e-4 rel (online vs two-pass softmax).
//! - attention_probs: 1e-6 abs + 1e-4 rel (weights in [0, 1]; the GPU pre-scales q).
//!
//! The kernels that read weights (embedding, matmul, the fused decode kernels, lm_head) run once
//! per weight [`Format`]: the twin computes on the same packed [`Matrix`], so
//! the tolerances are the f32 ones, except that the embedding in a scaled
//! format (int8, int4) allows an f32 ulp or two: `q · scale + wpe` may be
//! fused into one multiply-add on a GPU and rounded once instead of twice.

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{fused, mass, rows, split};
use crate::kernels::*;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// `|gpu - cpu| <= atol + rtol · |cpu|` for every element; NaN never passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub atol: f32,
    pub rtol: f32,
}

pub(super) const EXACT: Tolerance = Tolerance { atol: 0.0, rtol: 0.0 };

/// Summation-order tolerance of a K-term dot product of inputs in [-1, 1].
pub(super) fn dot(k: usize) -> Tolerance {
    Tolerance { atol: k as f32 * f32::EPSILON, rtol: 1e-5 }
}

/// One dispatch of one kernel and what its CPU twin says it must write.
pub struct Case {
    pub kernel: Kernel,
    /// The weight format the kernel is compiled for.
    pub format: Format,
    /// The sizes in words, e.g. "17x1757x65".
    pub shape: String,
    /// The uniform at binding 0.
    pub params: Vec<u8>,
    /// Bindings 1.. in order (outputs included, poisoned with NaN).
    pub buffers: Vec<Vec<u8>>,
    /// The weight matrix's scales, in the formats that have them.
    pub scales: Option<Vec<u8>>,
    pub groups: [u32; 3],
    /// (index into `buffers`, output name, the CPU twin's values).
    pub want: Vec<(usize, &'static str, Vec<f32>)>,
    pub tolerance: Tolerance,
}

/// Every case of `kernel` (in every weight format, for the kernels that
/// read weights); the split kernels' laid out as `split` says.
pub fn cases(kernel: Kernel, split: Split) -> Vec<Case> {
    let formats: &[Format] = if kernel.reads_weights() { &Format::ALL } else { &[Format::F32] };
    formats.iter().flat_map(|&format| cases_in(kernel, format, split)).collect()
}

/// The cases of `kernel` with weights in `format`.
fn cases_in(kernel: Kernel, format: Format, split: Split) -> Vec<Case> {
    match kernel {
        Kernel::Embedding if format == Format::F32 => {
            embedding_cases(format).into_iter().chain(rows::embedding_cases()).collect()
        }
        Kernel::Embedding => embedding_cases(format),
        Kernel::Layernorm => layernorm_cases(),
        Kernel::Matmul => matmul_cases(format, Kernel::Matmul, split),
        Kernel::MatmulTiled => matmul_cases(format, Kernel::MatmulTiled, split),
        Kernel::MatmulSplit => matmul_cases(format, Kernel::MatmulSplit, split),
        Kernel::LnQkv => fused::ln_qkv_cases(format, None),
        Kernel::LnQkvSplit => fused::ln_qkv_cases(format, Some(split)),
        Kernel::MatvecResidual => fused::matvec_residual_cases(format, None),
        Kernel::MatvecResidualSplit => fused::matvec_residual_cases(format, Some(split)),
        Kernel::LnFcGelu => fused::ln_fc_gelu_cases(format, None),
        Kernel::LnFcGeluSplit => fused::ln_fc_gelu_cases(format, Some(split)),
        Kernel::KvWrite => kv_write_cases().into_iter().chain(rows::kv_write_cases()).collect(),
        Kernel::Attention => attention_cases().into_iter().chain(rows::attention_cases()).collect(),
        Kernel::AttentionSplit => split::attention_split_cases(),
        Kernel::AttentionCombine => split::attention_combine_cases(),
        Kernel::AttentionProjSplit => split::attention_proj_split_cases(format, split),
        Kernel::AttentionProbs => attention_probs_cases(),
        Kernel::KvMass => mass::kv_mass_cases(),
        Kernel::ResidualAdd => residual_add_cases(),
        Kernel::Gelu => gelu_cases(),
        Kernel::LmHead => lm_head_cases(format, Kernel::LmHead),
        Kernel::LmHeadSplit => lm_head_cases(format, Kernel::LmHeadSplit),
        Kernel::BlockSum => split::block_sum_cases(),
        Kernel::Argmax => split::argmax_cases(),
    }
}

pub(super) const SIZES: [usize; 5] = [1, 63, 64, 65, 1757];

/// `n` values uniform in [-1, 1) from a seeded generator, the same on every platform.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| (rng.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0).collect()
}

pub(super) fn poisoned(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

pub(super) fn bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A seeded weight matrix in `format`: its packed words as a binding and its scales.
pub(super) fn weights(
    format: Format,
    (rows, cols): (usize, usize),
    channels: Channels,
    seed: u64,
) -> (Matrix, Vec<u8>, Option<Vec<u8>>) {
    let m = Matrix::new(format, rows, cols, channels, &random(rows * cols, seed));
    let words = bytemuck::cast_slice(m.words()).to_vec();
    let scales = format.has_scales().then(|| bytes(m.scales()));
    (m, words, scales)
}

pub(super) fn params<P: bytemuck::Pod>(p: &P) -> Vec<u8> {
    bytemuck::bytes_of(p).to_vec()
}

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

fn embedding_cases(format: Format) -> Vec<Case> {
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
            let p = embedding::Params {
                n_rows: n_rows as u32,
                n_embd: n_embd as u32,
                pos0: pos0 as u32,
                v0: v0 as u32,
                n_vocab: (v1 - v0) as u32,
                row0: 0,
                _pad1: 0,
                _pad2: 0,
            };
            out.push(Case {
                kernel: Kernel::Embedding,
                format,
                shape: format!("{n_rows} rows of {n_embd}, vocabulary rows {v0}..{v1}"),
                params: params(&p),
                buffers: vec![
                    bytemuck::cast_slice(&tokens).to_vec(),
                    words,
                    bytes(&wpe),
                    bytes(&before),
                ],
                scales,
                groups: embedding::workgroups(&p),
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

fn layernorm_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for &n_embd in &SIZES {
        for n_rows in [1, 7] {
            // Offset inputs: a non-zero mean is what the two-pass variance is for.
            let x: Vec<f32> = random(n_rows * n_embd, 3).iter().map(|v| v * 3.0 + 0.5).collect();
            let (w, b) = (random(n_embd, 4), random(n_embd, 5));
            let mut want = poisoned(n_rows * n_embd);
            layernorm::run_cpu(&x, &w, &b, 1e-5, &mut want);
            let p = layernorm::Params {
                n_rows: n_rows as u32,
                n_embd: n_embd as u32,
                eps: 1e-5,
                _pad: 0,
            };
            out.push(Case {
                kernel: Kernel::Layernorm,
                format: Format::F32,
                shape: format!("{n_rows}x{n_embd}"),
                params: params(&p),
                buffers: vec![
                    bytes(&x),
                    bytes(&[w, b].concat()),
                    bytes(&poisoned(n_rows * n_embd)),
                ],
                scales: None,
                groups: layernorm::workgroups(&p),
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
fn matmul_cases(format: Format, kernel: Kernel, split: Split) -> Vec<Case> {
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
        let p = matmul::Params { m: m as u32, k: k as u32, n: n as u32, _pad: 0 };
        let (params, groups, layout) = match kernel {
            Kernel::MatmulSplit => {
                let q = matmul_split::Params { m: p.m, k: p.k, n: p.n, wide: split.wide };
                let shape = matmul_split::Shape { k: p.k, n: p.n, split };
                (params(&q), shape.workgroups(&q, format), fused::wide(Some(split)))
            }
            Kernel::MatmulTiled => {
                let shape = matmul_tiled::Shape { k: p.k, n: p.n };
                (params(&p), shape.workgroups(&p, format), String::new())
            }
            _ => (params(&p), matmul::workgroups(&p), String::new()),
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

fn kv_write_cases() -> Vec<Case> {
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
        let qkv = random(n_rows * 3 * n_embd, 90);
        // Rows outside [slot0, slot0 + n_rows) must survive untouched.
        let (mut kc, mut vc) = (random(n_positions * kv_dim, 91), random(n_positions * kv_dim, 92));
        let (k0, v0) = (kc.clone(), vc.clone());
        kv_write::run_cpu(&qkv, heads, slot0, &mut kc, &mut vc);
        let p = kv_write::Params {
            n_rows: n_rows as u32,
            n_embd: n_embd as u32,
            slot0: slot0 as u32,
            row0: 0,
            head_size: hs as u32,
            group: group as u32,
            _pad0: 0,
            _pad1: 0,
        };
        out.push(Case {
            kernel: Kernel::KvWrite,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {slot0}"
            ),
            params: params(&p),
            buffers: vec![bytes(&qkv), bytes(&k0), bytes(&v0)],
            scales: None,
            groups: kv_write::workgroups(&p),
            want: vec![(1, "keys", kc), (2, "values", vc)],
            tolerance: EXACT,
        });
    }
    out
}

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

/// Seeded inputs of attention case `i`: (qkv, key cache, value cache, scale),
/// the pass's own keys and values already in the caches, as in the forward
/// pass; one K/V head per `group` query heads.
pub(super) fn attention_inputs(
    i: usize,
    (n_rows, n_head, hs, keys0): (usize, usize, usize, usize),
    group: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>, f32) {
    let n_embd = n_head * hs;
    let kv_dim = n_embd / group;
    let n_positions = keys0 + n_rows + 3;
    let qkv: Vec<f32> =
        random(n_rows * 3 * n_embd, 100 + i as u64).iter().map(|v| v * 2.0).collect();
    let mut kc: Vec<f32> =
        random(n_positions * kv_dim, 110 + i as u64).iter().map(|v| v * 2.0).collect();
    let mut vc = random(n_positions * kv_dim, 120 + i as u64);
    kv_write::run_cpu(&qkv, Heads { n_embd, head_size: hs, group }, keys0, &mut kc, &mut vc);
    (qkv, kc, vc, 1.0 / (hs as f32).sqrt())
}

fn attention_probs_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(n_rows, n_head, hs, keys0, group)) in ATTENTION_SHAPES.iter().enumerate() {
        let n_embd = n_head * hs;
        let (qkv, kc, _, scale) = attention_inputs(i, (n_rows, n_head, hs, keys0), group);
        let n_cols = keys0 + n_rows;
        let mut want = poisoned(n_head * n_rows * n_cols);
        let heads = Heads { n_embd, head_size: hs, group };
        attention_probs::run_cpu(&qkv, &kc, heads, keys0, scale, &mut want);
        let p = attention_probs::Params {
            n_rows: n_rows as u32,
            keys0: keys0 as u32,
            n_embd: n_embd as u32,
            head_size: hs as u32,
            scale,
            n_cols: n_cols as u32,
            group: group as u32,
            _pad1: 0,
        };
        out.push(Case {
            kernel: Kernel::AttentionProbs,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {keys0}"
            ),
            params: params(&p),
            buffers: vec![bytes(&qkv), bytes(&kc), bytes(&poisoned(n_head * n_rows * n_cols))],
            scales: None,
            groups: attention_probs::workgroups(&p),
            want: vec![(2, "probs", want)],
            // Weights in [0, 1]: the scores' rounding (pre-scaled q on the GPU) through exp.
            tolerance: Tolerance { atol: 1e-6, rtol: 1e-4 },
        });
    }
    out
}

fn attention_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &(n_rows, n_head, hs, keys0, group)) in ATTENTION_SHAPES.iter().enumerate() {
        let n_embd = n_head * hs;
        let (qkv, kc, vc, scale) = attention_inputs(i, (n_rows, n_head, hs, keys0), group);
        let mut want = poisoned(n_rows * n_embd);
        let heads = Heads { n_embd, head_size: hs, group };
        attention::run_cpu(&qkv, &kc, &vc, heads, keys0, scale, &mut want);
        let p = attention::Params {
            n_rows: n_rows as u32,
            keys0: keys0 as u32,
            n_embd: n_embd as u32,
            head_size: hs as u32,
            scale,
            row0: 0,
            group: group as u32,
            _pad2: 0,
        };
        out.push(Case {
            kernel: Kernel::Attention,
            format: Format::F32,
            shape: format!(
                "{n_rows} rows, {n_head} heads of {hs} in groups of {group}, at {keys0}"
            ),
            params: params(&p),
            buffers: vec![bytes(&qkv), bytes(&kc), bytes(&vc), bytes(&poisoned(n_rows * n_embd))],
            scales: None,
            groups: attention::workgroups(&p),
            want: vec![(3, "y", want)],
            tolerance: Tolerance { atol: 1e-5, rtol: 1e-4 },
        });
    }
    out
}

fn residual_add_cases() -> Vec<Case> {
    SIZES
        .iter()
        .map(|&n| {
            let (y, x) = (random(n, 80), random(n, 81));
            let mut want = x.clone();
            residual_add::run_cpu(&y, &mut want);
            let p = residual_add::Params { n: n as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
            Case {
                kernel: Kernel::ResidualAdd,
                format: Format::F32,
                shape: format!("{n}"),
                params: params(&p),
                buffers: vec![bytes(&y), bytes(&x)],
                scales: None,
                groups: residual_add::workgroups(&p),
                want: vec![(1, "x", want)],
                tolerance: EXACT,
            }
        })
        .collect()
}

fn gelu_cases() -> Vec<Case> {
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
            let p = gelu::Params { n: x.len() as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
            Case {
                kernel: Kernel::Gelu,
                format: Format::F32,
                shape: format!("{}", x.len()),
                params: params(&p),
                buffers: vec![bytes(&x)],
                scales: None,
                groups: gelu::workgroups(&p),
                want: vec![(0, "x", want)],
                tolerance: Tolerance { atol: 1e-6, rtol: 1e-5 },
            }
        })
        .collect()
}

/// The LM head's cases, for lm_head or lm_head_split (the same `Params`;
/// the split head's workgroups take one logits row each, so its cases stop
/// at three rows: seventeen cost a software adapter seconds a format).
fn lm_head_cases(format: Format, kernel: Kernel) -> Vec<Case> {
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
        let p = lm_head::Params {
            n_out: n_out as u32,
            row0: row0 as u32,
            n_embd: n_embd as u32,
            vocab_size: vocab as u32,
            v0: v0 as u32,
            n_vocab: (v1 - v0) as u32,
            _pad0: 0,
            _pad1: 0,
        };
        let groups = match kernel {
            Kernel::LmHeadSplit => {
                lm_head_split::Shape { v0: p.v0, n_vocab: p.n_vocab }.workgroups(&p, format)
            }
            _ => lm_head::workgroups(&p),
        };
        out.push(Case {
            kernel,
            format,
            shape: format!(
                "vocab {vocab} (rows {v0}..{v1}), n_embd {n_embd}, {n_out} of {n_rows} rows"
            ),
            params: params(&p),
            buffers: vec![bytes(&x), words, bytes(&before)],
            scales,
            groups,
            want: vec![(2, "logits", want)],
            tolerance: dot(n_embd),
        });
    }
    out
}

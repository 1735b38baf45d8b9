//! A Llama-family `model.safetensors` → [`Weights`] in the layout every
//! kernel already reads: per block one `[in, out]` QKV matrix (`q | k | v`),
//! one output projection, one MLP input matrix (gate and up) and one MLP
//! output matrix, in the format the engine packs. The checkpoint's
//! `nn.Linear` weights are `[out, in]`; they are transposed here, once.
//!
//! Two column orders differ from the checkpoint's, so that each pair a
//! kernel combines sits in neighbouring columns (one invocation, or one
//! weight word, computes both: the fused decode kernels rotate and gate
//! without a second pass):
//! - each q and k head's dimensions are interleaved, `d0, d0 + half, d1,
//!   d1 + half, …` (`paired`): RoPE's "rotate half" pairs become neighbours,
//!   the form Meta's checkpoints had before `transformers` permuted them.
//!   Attention scores are sums over a head's dimensions, so the same
//!   permutation of q and k changes none of them, and v keeps its order;
//! - the MLP input's columns are gate and up in turn, `g0, u0, g1, u1, …`
//!   (`interleaved`).
//!
//! K/V heads grouped in training (`num_key_value_heads` < heads) stay as
//! narrow as the checkpoint has them: the QKV matrix is `q | k | v` with
//! `n_embd + 2 · kv_dim` columns, as a converted GPT-2's pooled one is
//! (`groups.rs`), and the cache keeps one K/V head per group.

use super::reader::Reader;
use super::weights::{LayerWeights, Weights};
use super::{Config, Llama};
use crate::error::Result;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// The checkpoint's linear layers of one block, in data-flow order (after
/// `layers.{l}.`), and the number of output rows each has.
const LINEARS: [&str; 7] = [
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
];

/// Reads and validates every tensor `config` calls for. With `keep_f16`, a
/// checkpoint whose every linear layer is stored as f16 has its matrices
/// held as f16 (the same words: f16 → f32 → f16 is exact).
pub(super) fn read(t: &Reader, config: &Config, keep_f16: bool) -> Result<Weights> {
    let llama = config.llama().expect("a Llama-family config");
    let blocks = |l: usize| LINEARS.map(|p| format!("layers.{l}.{p}.weight")).to_vec();
    let f16 = keep_f16 && t.all_f16(config, "embed_tokens.weight", blocks);
    let held = |m: Matrix| if f16 { m.to_format(Format::F16) } else { t.held(m) };
    let (e, v) = (config.n_embd, config.vocab_size);
    let layers = (0..config.n_layer)
        .map(|l| read_layer(t, config, llama, l).map(|layer| layer.map_matrices(held)))
        .collect::<Result<Vec<_>>>()?;
    // (packed on read straight from its stored values: the largest matrix)
    let embedding = |name: &str| -> Result<Matrix> {
        let full = t.resolve(name).ok_or_else(|| t.missing(name))?;
        Ok(held(t.matrix_named(&full, v, e, Channels::Rows)?))
    };
    let lm_head = match config.tie_word_embeddings {
        true => None,
        false => Some(embedding("lm_head.weight")?),
    };
    Ok(Weights {
        wte: embedding("embed_tokens.weight")?,
        wpe: Vec::new(),
        layers,
        ln_f_weight: t.get("norm.weight", &[e])?,
        ln_f_bias: Vec::new(),
        lm_head,
    })
}

/// Block `l`, its matrices f32.
fn read_layer(t: &Reader, c: &Config, llama: &Llama, l: usize) -> Result<LayerWeights> {
    let (e, i, kv) = (c.n_embd, c.n_inner, c.kv_dim());
    let name = |s: &str| format!("layers.{l}.{s}");
    // (out, in) as stored, and its bias where the config has one.
    let linear = |part: &str, out: usize, inp: usize, bias: bool| -> Result<(Vec<f32>, Vec<f32>)> {
        let w = t.get(&name(&format!("{part}.weight")), &[out, inp])?;
        let b = match bias {
            true => t.get(&name(&format!("{part}.bias")), &[out])?,
            false => vec![0.0; out],
        };
        Ok((w, b))
    };
    let b = llama.biases;
    let [q, k, v, o, gate, up, down] = LINEARS;
    let hs = c.head_size;
    let q = paired(linear(q, e, e, b.qkv)?, hs);
    let (k, v) = (paired(linear(k, kv, e, b.qkv)?, hs), linear(v, kv, e, b.qkv)?);
    let o = linear(o, e, e, b.o)?;
    let gate_up = interleaved(&linear(gate, i, e, b.mlp)?, &linear(up, i, e, b.mlp)?, e);
    let down = linear(down, e, i, b.mlp)?;
    let qkv = [&q, &k, &v];
    Ok(LayerWeights {
        ln_1_weight: t.get(&name("input_layernorm.weight"), &[e])?,
        ln_1_bias: Vec::new(),
        c_attn_weight: stacked(&qkv, e),
        c_attn_bias: stacked_bias(&qkv),
        attn_proj_weight: stacked(&[&o], e),
        attn_proj_bias: o.1,
        ln_2_weight: t.get(&name("post_attention_layernorm.weight"), &[e])?,
        ln_2_bias: Vec::new(),
        c_fc_weight: stacked(&[&gate_up], e),
        c_fc_bias: gate_up.1,
        mlp_proj_weight: stacked(&[&down], i),
        mlp_proj_bias: down.1,
    })
}

/// An `(out, in)` linear layer and its bias.
type Linear = (Vec<f32>, Vec<f32>);

/// `linear` with each head's output rows interleaved: row `2j` is the
/// head's row `j`, row `2j + 1` its row `j + head_size / 2`.
fn paired((w, b): Linear, head_size: usize) -> Linear {
    let inp = w.len() / b.len();
    let half = head_size / 2;
    let source = |r: usize| r - r % head_size + (r % head_size) / 2 + (r % 2) * half;
    let rows = (0..b.len()).map(source);
    (
        rows.clone().flat_map(|r| w[r * inp..][..inp].to_vec()).collect(),
        rows.map(|r| b[r]).collect(),
    )
}

/// Two `(n, in)` linear layers as one `(2n, in)`, their rows in turn.
fn interleaved((wa, ba): &Linear, (wb, bb): &Linear, inp: usize) -> Linear {
    let rows = wa.chunks_exact(inp).zip(wb.chunks_exact(inp));
    let w = rows.flat_map(|(a, b)| a.iter().chain(b).copied()).collect();
    (w, ba.iter().zip(bb).flat_map(|(&a, &b)| [a, b]).collect())
}

/// The `[inp, Σ out]` matrix of `(out, inp)` linear layers side by side, each transposed.
fn stacked(parts: &[&Linear], inp: usize) -> Matrix {
    let width: usize = parts.iter().map(|(_, b)| b.len()).sum();
    let mut values = vec![0.0; inp * width]; // (inp, width)
    let mut col0 = 0;
    for (w, b) in parts {
        for (c, row) in w.chunks_exact(inp).enumerate() {
            row.iter().enumerate().for_each(|(r, &x)| values[r * width + col0 + c] = x);
        }
        col0 += b.len();
    }
    Matrix::from_f32(inp, width, Channels::Cols, values)
}

/// The biases of [`stacked`]'s parts, side by side.
fn stacked_bias(parts: &[&Linear]) -> Vec<f32> {
    parts.iter().flat_map(|(_, b)| b.iter().copied()).collect()
}

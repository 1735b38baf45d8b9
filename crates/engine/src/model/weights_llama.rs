//! A Llama-family `model.safetensors` → [`Weights`] in the layout every
//! kernel already reads: per block one `[in, out]` QKV matrix (`q | k | v`),
//! one output projection, one MLP input matrix (gate and up) and one MLP
//! output matrix, in the format the engine packs. The checkpoint's
//! `nn.Linear` weights are `[out, in]`; they are transposed here, once,
//! gathered a piece at a time from the stored values as they are packed
//! ([`Gathered`]): no block is ever held as f32 on the way.
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
use crate::storage::values::{Gathered, StoredValues};

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
    // Held as f16: the blocks' matrices gathered from their stored values
    // (`pack`), the embedding and head read straight into their words (`f16`).
    let t = &Reader { pack: if f16 { Some(Format::F16) } else { t.pack }, f16, ..*t };
    let (e, v) = (config.n_embd, config.vocab_size);
    let layers =
        (0..config.n_layer).map(|l| read_layer(t, config, llama, l)).collect::<Result<Vec<_>>>()?;
    let embedding = |name: &str| -> Result<Matrix> {
        let full = t.resolve(name).ok_or_else(|| t.missing(name))?;
        t.matrix_named(&full, v, e, Channels::Rows)
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

/// Block `l`, its matrices in the format `t` holds them in.
fn read_layer(t: &Reader, c: &Config, llama: &Llama, l: usize) -> Result<LayerWeights> {
    let (e, i, kv, hs) = (c.n_embd, c.n_inner, c.kv_dim(), c.head_size);
    let name = |s: &str| format!("layers.{l}.{s}");
    // (out, in) as stored, and its bias where the config has one.
    let linear = |part: &str, out: usize, inp: usize, bias: bool| -> Result<Linear> {
        let w = t.values(&name(&format!("{part}.weight")), &[out, inp])?;
        let b = match bias {
            true => t.get(&name(&format!("{part}.bias")), &[out])?,
            false => vec![0.0; out],
        };
        Ok(Linear { w, b })
    };
    let b = llama.biases;
    let [q, k, v, o, gate, up, down] = LINEARS;
    let (q, k, v) = (linear(q, e, e, b.qkv)?, linear(k, kv, e, b.qkv)?, linear(v, kv, e, b.qkv)?);
    let o = linear(o, e, e, b.o)?;
    let (gate, up) = (linear(gate, i, e, b.mlp)?, linear(up, i, e, b.mlp)?);
    let down = linear(down, e, i, b.mlp)?;
    let qkv = [paired(0, e, hs), paired(1, kv, hs), in_order(2, kv)].concat();
    let (c_attn_weight, c_attn_bias) = side_by_side(t, e, vec![q, k, v], qkv);
    let (attn_proj_weight, attn_proj_bias) = side_by_side(t, e, vec![o], in_order(0, e));
    let gate_up = (0..i).flat_map(|j| [(0, j), (1, j)]).collect();
    let (c_fc_weight, c_fc_bias) = side_by_side(t, e, vec![gate, up], gate_up);
    let (mlp_proj_weight, mlp_proj_bias) = side_by_side(t, i, vec![down], in_order(0, e));
    Ok(LayerWeights {
        ln_1_weight: t.get(&name("input_layernorm.weight"), &[e])?,
        ln_1_bias: Vec::new(),
        c_attn_weight,
        c_attn_bias,
        attn_proj_weight,
        attn_proj_bias,
        ln_2_weight: t.get(&name("post_attention_layernorm.weight"), &[e])?,
        ln_2_bias: Vec::new(),
        c_fc_weight,
        c_fc_bias,
        mlp_proj_weight,
        mlp_proj_bias,
    })
}

/// An `(out, in)` linear layer as stored, and its bias.
struct Linear<'a> {
    w: StoredValues<'a>,
    b: Vec<f32>,
}

/// Linear `part`'s `n` rows, each head's interleaved: column `2j` of a head
/// is its row `j`, column `2j + 1` its row `j + head_size / 2`.
fn paired(part: usize, n: usize, head_size: usize) -> Vec<(usize, usize)> {
    let half = head_size / 2;
    let source = |r: usize| r - r % head_size + (r % head_size) / 2 + (r % 2) * half;
    (0..n).map(|r| (part, source(r))).collect()
}

/// Linear `part`'s `n` rows in order.
fn in_order(part: usize, n: usize) -> Vec<(usize, usize)> {
    (0..n).map(|r| (part, r)).collect()
}

/// The `[inp, columns.len()]` matrix of `parts` transposed side by side,
/// column `c` being row `columns[c].1` of `parts[columns[c].0]` (held as `t`
/// holds matrices), and its bias (the same rows' biases).
fn side_by_side(
    t: &Reader,
    inp: usize,
    parts: Vec<Linear>,
    columns: Vec<(usize, usize)>,
) -> (Matrix, Vec<f32>) {
    let bias = columns.iter().map(|&(part, row)| parts[part].b[row]).collect();
    let parts = parts.into_iter().map(|linear| linear.w).collect();
    let gathered = Gathered { parts, inp, columns };
    (t.hold(inp, gathered.columns.len(), Channels::Cols, &gathered), bias)
}

//! [`Config`]: a model's hyper-parameters, validated; GPT-2's `config.json`
//! read here, the Llama family's in `config_llama.rs`, the choice between
//! them in `config_read.rs`.

use serde::Deserialize;

use super::llama::Llama;
use crate::error::{EngineError, Result};
use crate::storage::format::{Channels, Format};

/// Hyper-parameters of a model, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Number of transformer blocks.
    pub n_layer: usize,
    /// Attention heads per block.
    pub n_head: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
    /// `n_embd / n_head`.
    pub head_size: usize,
    /// Heads that keep keys and values: `n_head` (each its own), unless the
    /// model was converted to grouped K/V heads (`Model::with_kv_groups`).
    pub n_kv_head: usize,
    /// Width of the MLP's hidden layer (`n_inner`, default `4 * n_embd`).
    pub n_inner: usize,
    /// Rows of the position table: the longest context (`block_size`).
    pub n_positions: usize,
    /// Rows of the token embedding.
    pub vocab_size: usize,
    /// LayerNorm epsilon.
    pub layer_norm_epsilon: f32,
    /// Whether the LM head reuses the token embedding.
    pub tie_word_embeddings: bool,
    /// Token that ends a text, if the model has one.
    pub eos_token_id: Option<u32>,
    /// Divide attention scores by `sqrt(head_size)` (GPT-2 default: yes).
    pub scale_attn_weights: bool,
    /// Also divide scores of layer `i` by `i + 1` (off in GPT-2).
    pub scale_attn_by_inverse_layer_idx: bool,
    /// Which family's layers: how a block normalises, where positions come
    /// from, which MLP. (`layer_norm_epsilon` is the family's norm's.)
    pub family: Family,
}

/// The layer types of a model family.
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// GPT-2: LayerNorm, a learned position table, a GELU MLP.
    Gpt2,
    /// Llama, Mistral, Qwen2: RMSNorm, rotary positions, a SwiGLU MLP,
    /// K/V heads grouped in training.
    Llama(Llama),
}

/// The JSON as written by `transformers`; every field optional so that a missing
/// one becomes a clear message instead of a serde error about the whole file.
#[derive(Deserialize)]
struct RawConfig {
    n_layer: Option<i64>,
    n_head: Option<i64>,
    n_embd: Option<i64>,
    n_inner: Option<i64>,
    n_positions: Option<i64>,
    vocab_size: Option<i64>,
    layer_norm_epsilon: Option<f64>,
    activation_function: Option<String>,
    tie_word_embeddings: Option<bool>,
    eos_token_id: Option<serde_json::Value>,
    scale_attn_weights: Option<bool>,
    scale_attn_by_inverse_layer_idx: Option<bool>,
}

/// Upper bounds that keep every product below overflow and allocation sane.
pub(super) const MAX_DIM: i64 = 1 << 16;
pub(super) const MAX_VOCAB: i64 = 1 << 21;

pub(super) fn bad(msg: impl Into<String>) -> EngineError {
    EngineError::Config(msg.into())
}

pub(super) fn field(value: Option<i64>, name: &str, max: i64) -> Result<usize> {
    let v = value.ok_or_else(|| bad(format!("missing field `{name}`")))?;
    if v <= 0 || v > max {
        return Err(bad(format!("`{name}` is {v}, expected 1..={max}")));
    }
    Ok(v as usize)
}

impl Config {
    /// Parses and validates the text of a GPT-2 `config.json` (see `Config::from_json`).
    pub(super) fn from_gpt2_json(text: &str) -> Result<Config> {
        let raw: RawConfig =
            serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let n_layer = field(raw.n_layer, "n_layer", 1024)?;
        let n_head = field(raw.n_head, "n_head", 1024)?;
        let n_embd = field(raw.n_embd, "n_embd", MAX_DIM)?;
        let n_positions = field(raw.n_positions, "n_positions", MAX_DIM)?;
        let vocab_size = field(raw.vocab_size, "vocab_size", MAX_VOCAB)?;
        let n_inner = match raw.n_inner {
            None => 4 * n_embd,
            Some(v) => field(Some(v), "n_inner", 4 * MAX_DIM)?,
        };
        if n_embd % n_head != 0 {
            return Err(bad(format!(
                "`n_embd` ({n_embd}) is not a multiple of `n_head` ({n_head})"
            )));
        }
        let eps = raw.layer_norm_epsilon.unwrap_or(1e-5);
        if !(eps.is_finite() && eps > 0.0 && eps < 1.0) {
            return Err(bad(format!("`layer_norm_epsilon` is {eps}, expected 0 < eps < 1")));
        }
        let activation = raw.activation_function.as_deref().unwrap_or("gelu_new");
        // Both names denote the tanh approximation the kernels implement.
        if !matches!(activation, "gelu_new" | "gelu_pytorch_tanh") {
            return Err(bad(format!(
                "unsupported `activation_function` \"{activation}\": the engine implements \"gelu_new\" (tanh form)"
            )));
        }
        Ok(Config {
            n_layer,
            n_head,
            n_embd,
            head_size: n_embd / n_head,
            n_kv_head: n_head,
            n_inner,
            n_positions,
            vocab_size,
            layer_norm_epsilon: eps as f32,
            tie_word_embeddings: raw.tie_word_embeddings.unwrap_or(true),
            eos_token_id: parse_eos(raw.eos_token_id, vocab_size)?,
            scale_attn_weights: raw.scale_attn_weights.unwrap_or(true),
            scale_attn_by_inverse_layer_idx: raw.scale_attn_by_inverse_layer_idx.unwrap_or(false),
            family: Family::Gpt2,
        })
    }

    /// The attention's head layout: the kernels' and the cache's.
    pub fn heads(&self) -> Heads {
        Heads {
            n_embd: self.n_embd,
            head_size: self.head_size,
            group: self.n_head / self.n_kv_head,
        }
    }

    /// The width of a cached key (or value) row: `n_kv_head · head_size`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_head * self.head_size
    }

    /// Numbers in a row of qkv ([`Heads::qkv_width`]).
    pub fn qkv_width(&self) -> usize {
        self.heads().qkv_width()
    }

    /// The factor attention scores of `layer` are multiplied by.
    pub fn attn_scale(&self, layer: usize) -> f32 {
        let mut scale = 1.0f32;
        if self.scale_attn_weights {
            scale /= (self.head_size as f32).sqrt();
        }
        if self.scale_attn_by_inverse_layer_idx {
            scale /= (layer + 1) as f32;
        }
        scale
    }

    /// The Llama family's part, `None` for GPT-2.
    pub fn llama(&self) -> Option<&Llama> {
        match &self.family {
            Family::Gpt2 => None,
            Family::Llama(llama) => Some(llama),
        }
    }

    /// One block's matrices as the kernels hold them, `(rows, cols)` =
    /// `[in, out]` (output channels along the columns): q | k | v, the
    /// attention's output, the MLP's input (the Llama family's gate and up
    /// side by side), the MLP's output.
    pub fn block_matrices(&self) -> [(usize, usize); 4] {
        let (e, i, kv) = (self.n_embd, self.n_inner, self.kv_dim());
        let mlp_in = match &self.family {
            Family::Gpt2 => i,
            Family::Llama(_) => 2 * i,
        };
        [(e, e + 2 * kv), (e, e), (e, mlp_in), (i, e)]
    }

    /// Weights in one block's matrices.
    pub fn block_matrix_weights(&self) -> usize {
        self.block_matrices().iter().map(|(rows, cols)| rows * cols).sum()
    }

    /// Weights in the largest matrix: the embedding, or a block's largest
    /// (what a load reading a tensor at a time holds besides the model).
    pub fn largest_matrix_weights(&self) -> usize {
        let block = self.block_matrices().map(|(rows, cols)| rows * cols);
        block.into_iter().fold(self.vocab_size * self.n_embd, usize::max)
    }

    /// Bytes of the weights held in `format`, as loaded
    /// ([`Weights::bytes`](super::Weights::bytes)): each matrix's words and
    /// scales, everything else f32. What the page tells before a download.
    pub fn weight_bytes(&self, format: Format) -> u64 {
        let bytes = |(rows, cols, channels): (usize, usize, Channels)| {
            format.bytes(rows * cols) + 4 * format.scale_count(rows, cols, channels) as u64
        };
        let (e, v) = (self.n_embd, self.vocab_size);
        let embeddings = if self.tie_word_embeddings { 1 } else { 2 }; // (and the LM head)
        let block: u64 =
            self.block_matrices().map(|(r, c)| bytes((r, c, Channels::Cols))).iter().sum();
        let matrices = embeddings * bytes((v, e, Channels::Rows)) + self.n_layer as u64 * block;
        // Every matrix's bias is held, zeros where the checkpoint has none.
        let (norms, rest) = self.vectors();
        matrices + 4 * (self.n_layer * (norms + self.block_biases()) + rest) as u64
    }

    /// A block's biases as held: one per output column of each matrix.
    fn block_biases(&self) -> usize {
        self.block_matrices().iter().map(|(_, cols)| cols).sum()
    }

    /// The f32 values besides the matrices' and their biases: a block's
    /// norms (GPT-2's weights and biases, RMS norms' weights), and those
    /// outside the blocks (the final norm; GPT-2's position embedding).
    fn vectors(&self) -> (usize, usize) {
        let e = self.n_embd;
        match &self.family {
            Family::Gpt2 => (4 * e, self.n_positions * e + 2 * e),
            Family::Llama(_) => (2 * e, e),
        }
    }

    /// Number of parameters in the checkpoint (tied LM head counted once).
    pub fn n_params(&self) -> usize {
        let (e, i, kv) = (self.n_embd, self.n_inner, self.kv_dim());
        let head = if self.tie_word_embeddings { 0 } else { self.vocab_size * e };
        // each block's biases, where the checkpoint has them
        let biases = match &self.family {
            Family::Gpt2 => self.block_biases(),
            Family::Llama(l) => {
                let b = l.biases;
                let biases = [(b.qkv, e + 2 * kv), (b.o, e), (b.mlp, 2 * i + e)];
                biases.iter().filter(|(on, _)| *on).map(|(_, n)| n).sum()
            }
        };
        let (norms, rest) = self.vectors();
        let block = self.block_matrix_weights() + norms + biases;
        self.vocab_size * e + self.n_layer * block + rest + head
    }
}

/// `eos_token_id` may be absent, null, a number or (in newer configs) a list.
pub(super) fn parse_eos(
    value: Option<serde_json::Value>,
    vocab_size: usize,
) -> Result<Option<u32>> {
    let id = match value {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::Array(a)) => a.first().and_then(|v| v.as_u64()),
        Some(_) => None,
    };
    match id {
        Some(id) if (id as usize) < vocab_size => Ok(Some(id as u32)),
        // transformers' default config says 50256 even for tiny random vocabularies:
        // such an id can never be produced, so treat it as "no end-of-text token".
        Some(_) => Ok(None),
        None => Err(bad("`eos_token_id` must be a token id")),
    }
}

/// How attention's heads lie in `qkv` and in the K/V cache: `n_embd / head_size`
/// query heads, and one K/V head per `group` of them (1: every head its own;
/// grouped-query attention shares one among several). A cache row holds
/// `kv_dim` numbers; query head h reads K/V head `h / group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heads {
    pub n_embd: usize,
    pub head_size: usize,
    pub group: usize,
}

impl Heads {
    /// Every head its own K/V head (the layout of an unconverted GPT-2).
    pub fn each(n_embd: usize, head_size: usize) -> Heads {
        Heads { n_embd, head_size, group: 1 }
    }

    /// Numbers in a cached key (or value) row.
    pub fn kv_dim(self) -> usize {
        self.n_embd / self.group
    }

    /// Numbers in a row of qkv: the queries, then one K and one V head per
    /// group (`n_embd + 2 · kv_dim`; GPT-2's `3 · n_embd`).
    pub fn qkv_width(self) -> usize {
        self.n_embd + 2 * self.kv_dim()
    }

    /// The first column of query head `h`'s K/V head in a cache row.
    pub fn kv0(self, h: usize) -> usize {
        (h / self.group) * self.head_size
    }
}

//! `config.json` of the Llama family (`model_type` "llama", "mistral",
//! "qwen2") → a validated [`Config`]: RMSNorm, rotary positions, a SwiGLU
//! MLP and K/V heads grouped in training. What the engine does not implement
//! (Qwen2's and mixed sliding windows, mixtures of experts, other rotary
//! scalings) is refused with a sentence naming it, before anything is allocated.

use serde::Deserialize;
use serde_json::Value;

use super::config::{bad, field, parse_eos, Config, Family, MAX_DIM, MAX_VOCAB};
use super::llama::{Llama, Llama3Scaling, LlamaBiases, Rope};
use crate::error::Result;

/// The JSON as `transformers` writes it; every field optional so that a
/// missing one becomes a clear message.
#[derive(Deserialize)]
struct RawLlama {
    hidden_size: Option<i64>,
    intermediate_size: Option<i64>,
    num_hidden_layers: Option<i64>,
    num_attention_heads: Option<i64>,
    num_key_value_heads: Option<i64>,
    head_dim: Option<i64>,
    max_position_embeddings: Option<i64>,
    vocab_size: Option<i64>,
    rms_norm_eps: Option<f64>,
    hidden_act: Option<String>,
    tie_word_embeddings: Option<bool>,
    eos_token_id: Option<Value>,
    attention_bias: Option<bool>,
    mlp_bias: Option<bool>,
    // Older configs: `rope_theta` and `rope_scaling`; newer: `rope_parameters`.
    rope_theta: Option<f64>,
    rope_scaling: Option<Value>,
    rope_parameters: Option<Value>,
    partial_rotary_factor: Option<f64>,
    sliding_window: Option<Value>,
    use_sliding_window: Option<bool>,
    layer_types: Option<Vec<String>>,
    num_local_experts: Option<Value>,
    num_experts: Option<Value>,
}

/// Parses the Llama-family config of `model_type` (one of [`LLAMA_TYPES`]).
pub fn from_json(text: &str, model_type: &str) -> Result<Config> {
    let raw: RawLlama =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    refuse_unsupported(&raw, model_type)?;
    let n_layer = field(raw.num_hidden_layers, "num_hidden_layers", 1024)?;
    let n_embd = field(raw.hidden_size, "hidden_size", MAX_DIM)?;
    let (n_head, n_kv_head, head_size) = heads(&raw, n_embd)?;
    let n_inner = field(raw.intermediate_size, "intermediate_size", 4 * MAX_DIM)?;
    let vocab_size = field(raw.vocab_size, "vocab_size", MAX_VOCAB)?;
    // No position table to size: the context is what the model was trained
    // for, capped where the cache's sizes stay sane.
    let n_positions = field(raw.max_position_embeddings, "max_position_embeddings", i64::MAX)?
        .min(MAX_DIM as usize)
        .min(uniform_window(&raw, model_type).unwrap_or(usize::MAX));
    let eps = raw.rms_norm_eps.unwrap_or(1e-6);
    if !(eps.is_finite() && eps > 0.0 && eps < 1.0) {
        return Err(bad(format!("`rms_norm_eps` is {eps}, expected 0 < eps < 1")));
    }
    let rope = rope(&raw)?;
    let qwen2 = model_type == "qwen2";
    let attention_bias = raw.attention_bias.unwrap_or(false);
    let biases = LlamaBiases {
        qkv: qwen2 || attention_bias,
        o: !qwen2 && attention_bias,
        mlp: raw.mlp_bias.unwrap_or(false),
    };
    Ok(Config {
        n_layer,
        n_head,
        n_embd,
        head_size,
        n_kv_head,
        n_inner,
        n_positions,
        vocab_size,
        layer_norm_epsilon: eps as f32,
        tie_word_embeddings: raw.tie_word_embeddings.unwrap_or(false),
        eos_token_id: parse_eos(raw.eos_token_id, vocab_size)?,
        scale_attn_weights: true,
        scale_attn_by_inverse_layer_idx: false,
        family: Family::Llama(Llama { rope, biases }),
    })
}

/// The heads of a `n_embd`-wide stream: (query heads, K/V heads, head size).
fn heads(raw: &RawLlama, n_embd: usize) -> Result<(usize, usize, usize)> {
    let n_head = field(raw.num_attention_heads, "num_attention_heads", 1024)?;
    let n_kv_head = match raw.num_key_value_heads {
        None => n_head,
        v => field(v, "num_key_value_heads", n_head as i64)?,
    };
    if !n_embd.is_multiple_of(n_head) || !n_head.is_multiple_of(n_kv_head) {
        return Err(bad(format!(
            "{n_head} heads of a {n_embd}-wide stream sharing {n_kv_head} K/V heads: \
             `hidden_size` must be a multiple of `num_attention_heads`, and that of \
             `num_key_value_heads`"
        )));
    }
    let head_size = n_embd / n_head;
    if let Some(d) = raw.head_dim.filter(|&d| d != head_size as i64) {
        return Err(bad(format!(
            "`head_dim` is {d}, not `hidden_size / num_attention_heads` ({head_size}): \
             Decode Lab's attention keeps heads as wide as the stream divided among them"
        )));
    }
    if !head_size.is_multiple_of(2) {
        return Err(bad(format!("heads of {head_size} dimensions: rotary positions pair them")));
    }
    Ok((n_head, n_kv_head, head_size))
}

/// Refuses, by name, what this family's checkpoints may ask for and the
/// engine does not do.
fn refuse_unsupported(raw: &RawLlama, model_type: &str) -> Result<()> {
    if raw.num_local_experts.is_some() || raw.num_experts.is_some() {
        return Err(bad("a mixture of experts: Decode Lab runs dense MLPs only"));
    }
    let act = raw.hidden_act.as_deref().unwrap_or("silu");
    if act != "silu" {
        return Err(bad(format!(
            "`hidden_act` is \"{act}\": the engine's gated MLP (SwiGLU) implements \"silu\""
        )));
    }
    if raw.partial_rotary_factor.is_some_and(|f| f != 1.0) {
        return Err(bad("`partial_rotary_factor`: the engine rotates every dimension of a head"));
    }
    let window = raw.sliding_window.as_ref().and_then(Value::as_u64);
    let sliding_layers = raw.layer_types.iter().flatten().any(|t| t == "sliding_attention");
    let windowed = match model_type {
        // Qwen2 applies its window only where `use_sliding_window` says so.
        "qwen2" => raw.use_sliding_window.unwrap_or(false) || sliding_layers,
        _ => window.is_some() || sliding_layers,
    };
    if windowed && uniform_window(raw, model_type).is_none() {
        return Err(bad(format!(
            "a sliding attention window{}: Decode Lab's attention sees every earlier token",
            window.map(|w| format!(" of {w} tokens")).unwrap_or_default()
        )));
    }
    Ok(())
}

/// A sliding window every layer uses (Mistral's `sliding_window`, no
/// per-layer `layer_types`): the context is capped at it, where attention
/// over every earlier token is exactly the window's (a token sees itself
/// and the `window − 1` before it). Qwen2's window, which starts at a layer
/// (`max_window_layers`), and mixed layer types are refused.
fn uniform_window(raw: &RawLlama, model_type: &str) -> Option<usize> {
    let window = raw.sliding_window.as_ref().and_then(Value::as_u64).filter(|&w| w > 0)?;
    let mixed = raw.layer_types.iter().flatten().any(|t| t != "sliding_attention");
    (model_type != "qwen2" && !mixed).then_some(window as usize)
}

/// The rotary parameters, from `rope_parameters` (newer `transformers`) or
/// from `rope_theta` and `rope_scaling` (most checkpoints on the Hub).
fn rope(raw: &RawLlama) -> Result<Rope> {
    let params =
        raw.rope_parameters.as_ref().or(raw.rope_scaling.as_ref()).filter(|v| !v.is_null());
    let number = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_f64);
    let theta = number("rope_theta").or(raw.rope_theta).unwrap_or(10_000.0);
    if !(theta.is_finite() && theta > 1.0) {
        return Err(bad(format!("`rope_theta` is {theta}, expected a number above 1")));
    }
    let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let kind = text("rope_type").or(text("type")).unwrap_or("default");
    let llama3 = match kind {
        "default" => None,
        "llama3" => Some(llama3(&number)?),
        other => {
            return Err(bad(format!(
                "rotary scaling \"{other}\": the engine implements the default and \"llama3\""
            )))
        }
    };
    Ok(Rope { theta, llama3 })
}

fn llama3(number: &dyn Fn(&str) -> Option<f64>) -> Result<Llama3Scaling> {
    let get = |key: &str| {
        number(key)
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| bad(format!("\"llama3\" rotary scaling needs a positive `{key}`")))
    };
    let s = Llama3Scaling {
        factor: get("factor")?,
        low_freq_factor: get("low_freq_factor")?,
        high_freq_factor: get("high_freq_factor")?,
        original_max_position_embeddings: get("original_max_position_embeddings")?,
    };
    if s.high_freq_factor <= s.low_freq_factor {
        return Err(bad(
            "\"llama3\" rotary scaling: `high_freq_factor` must exceed `low_freq_factor`",
        ));
    }
    Ok(s)
}

//! `model.safetensors` → [`Weights`] (f32, row-major, Hugging Face Conv1D layout).
//! Second stop of the data flow: every tensor is checked for presence, shape,
//! dtype and finiteness here, so the forward passes can trust their inputs.

use safetensors::{Dtype, SafeTensors};

use crate::error::{EngineError, Result};
use crate::model::Config;

/// The weights of one transformer block. Linear weights are `[in, out]` (Conv1D).
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub ln_1_weight: Vec<f32>,      // (n_embd)
    pub ln_1_bias: Vec<f32>,        // (n_embd)
    pub c_attn_weight: Vec<f32>,    // (n_embd, 3 * n_embd): q | k | v
    pub c_attn_bias: Vec<f32>,      // (3 * n_embd)
    pub attn_proj_weight: Vec<f32>, // (n_embd, n_embd)
    pub attn_proj_bias: Vec<f32>,   // (n_embd)
    pub ln_2_weight: Vec<f32>,      // (n_embd)
    pub ln_2_bias: Vec<f32>,        // (n_embd)
    pub c_fc_weight: Vec<f32>,      // (n_embd, n_inner)
    pub c_fc_bias: Vec<f32>,        // (n_inner)
    pub mlp_proj_weight: Vec<f32>,  // (n_inner, n_embd)
    pub mlp_proj_bias: Vec<f32>,    // (n_embd)
}

/// All weights of a GPT-2 model, converted to f32.
#[derive(Debug, Clone)]
pub struct Weights {
    pub wte: Vec<f32>,             // (vocab_size, n_embd) token embedding
    pub wpe: Vec<f32>,             // (n_positions, n_embd) position embedding
    pub layers: Vec<LayerWeights>, // (n_layer)
    pub ln_f_weight: Vec<f32>,     // (n_embd)
    pub ln_f_bias: Vec<f32>,       // (n_embd)
    /// `Some` only when the LM head is not tied to `wte`.
    pub lm_head: Option<Vec<f32>>, // (vocab_size, n_embd)
}

impl Weights {
    /// The LM head matrix: `lm_head` when untied, else the token embedding.
    pub fn lm_head(&self) -> &[f32] {
        self.lm_head.as_deref().unwrap_or(&self.wte)
    }

    /// Reads and validates every tensor `config` calls for.
    pub fn from_safetensors(bytes: &[u8], config: &Config) -> Result<Weights> {
        let st =
            SafeTensors::deserialize(bytes).map_err(|e| EngineError::Safetensors(e.to_string()))?;
        let t = Reader { st: &st };
        let (e, i, v) = (config.n_embd, config.n_inner, config.vocab_size);
        let mut layers = Vec::with_capacity(config.n_layer);
        for l in 0..config.n_layer {
            let p = |s: &str| format!("h.{l}.{s}");
            layers.push(LayerWeights {
                ln_1_weight: t.get(&p("ln_1.weight"), &[e])?,
                ln_1_bias: t.get(&p("ln_1.bias"), &[e])?,
                c_attn_weight: t.get(&p("attn.c_attn.weight"), &[e, 3 * e])?,
                c_attn_bias: t.get(&p("attn.c_attn.bias"), &[3 * e])?,
                attn_proj_weight: t.get(&p("attn.c_proj.weight"), &[e, e])?,
                attn_proj_bias: t.get(&p("attn.c_proj.bias"), &[e])?,
                ln_2_weight: t.get(&p("ln_2.weight"), &[e])?,
                ln_2_bias: t.get(&p("ln_2.bias"), &[e])?,
                c_fc_weight: t.get(&p("mlp.c_fc.weight"), &[e, i])?,
                c_fc_bias: t.get(&p("mlp.c_fc.bias"), &[i])?,
                mlp_proj_weight: t.get(&p("mlp.c_proj.weight"), &[i, e])?,
                mlp_proj_bias: t.get(&p("mlp.c_proj.bias"), &[e])?,
            });
        }
        let lm_head = if config.tie_word_embeddings {
            None
        } else {
            Some(t.exact("lm_head.weight", &[v, e])?)
        };
        Ok(Weights {
            wte: t.get("wte.weight", &[v, e])?,
            wpe: t.get("wpe.weight", &[config.n_positions, e])?,
            layers,
            ln_f_weight: t.get("ln_f.weight", &[e])?,
            ln_f_bias: t.get("ln_f.bias", &[e])?,
            lm_head,
        })
    }
}

/// Looks tensors up by their Hugging Face names and converts them to f32.
struct Reader<'a> {
    st: &'a SafeTensors<'a>,
}

impl Reader<'_> {
    /// `name` as saved by `GPT2Model`, or `transformer.name` as saved by `GPT2LMHeadModel`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let prefixed = format!("transformer.{name}");
        match self.st.tensor(name) {
            Ok(_) => self.exact(name, shape),
            Err(_) if self.st.tensor(&prefixed).is_ok() => self.exact(&prefixed, shape),
            Err(_) => Err(EngineError::MissingTensor { name: name.to_string() }),
        }
    }

    fn exact(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let view = self
            .st
            .tensor(name)
            .map_err(|_| EngineError::MissingTensor { name: name.to_string() })?;
        if view.shape() != shape {
            return Err(EngineError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                got: view.shape().to_vec(),
            });
        }
        let values = to_f32(view.dtype(), view.data(), name)?;
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(EngineError::NonFinite { name: name.to_string(), index, value });
        }
        Ok(values)
    }
}

/// Little-endian bytes → f32 values. The data may be unaligned, hence byte chunks.
fn to_f32(dtype: Dtype, data: &[u8], name: &str) -> Result<Vec<f32>> {
    let values = match dtype {
        Dtype::F32 => {
            data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        }
        Dtype::F16 => {
            data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
        }
        Dtype::BF16 => {
            data.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
        }
        other => {
            return Err(EngineError::Dtype { name: name.to_string(), got: format!("{other:?}") })
        }
    };
    Ok(values)
}

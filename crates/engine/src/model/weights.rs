//! `model.safetensors` → [`Weights`] (f32, row-major, Hugging Face Conv1D layout;
//! the six weight matrices as [`Matrix`], which [`Weights::to_format`] packs).
//! Second stop of the data flow: every tensor is checked for presence, shape,
//! dtype and finiteness here, so the forward passes can trust their inputs.

use safetensors::{Dtype, SafeTensors};

use crate::error::{EngineError, Result};
use crate::model::Config;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// The weights of one transformer block. Linear weights are `[in, out]` (Conv1D).
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub ln_1_weight: Vec<f32>,    // (n_embd)
    pub ln_1_bias: Vec<f32>,      // (n_embd)
    pub c_attn_weight: Matrix,    // (n_embd, 3 * n_embd): q | k | v
    pub c_attn_bias: Vec<f32>,    // (3 * n_embd)
    pub attn_proj_weight: Matrix, // (n_embd, n_embd)
    pub attn_proj_bias: Vec<f32>, // (n_embd)
    pub ln_2_weight: Vec<f32>,    // (n_embd)
    pub ln_2_bias: Vec<f32>,      // (n_embd)
    pub c_fc_weight: Matrix,      // (n_embd, n_inner)
    pub c_fc_bias: Vec<f32>,      // (n_inner)
    pub mlp_proj_weight: Matrix,  // (n_inner, n_embd)
    pub mlp_proj_bias: Vec<f32>,  // (n_embd)
}

impl LayerWeights {
    /// The checkpoint names of [`LayerWeights::matrices`] (after `h.{layer}.`).
    pub const MATRIX_NAMES: [&'static str; 4] =
        ["attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"];

    /// The four matrices, in data-flow order.
    pub fn matrices(&self) -> [&Matrix; 4] {
        [&self.c_attn_weight, &self.attn_proj_weight, &self.c_fc_weight, &self.mlp_proj_weight]
    }

    /// Values in the f32 vectors (layer norms and biases).
    fn vector_len(&self) -> usize {
        [
            &self.ln_1_weight,
            &self.ln_1_bias,
            &self.c_attn_bias,
            &self.attn_proj_bias,
            &self.ln_2_weight,
            &self.ln_2_bias,
            &self.c_fc_bias,
            &self.mlp_proj_bias,
        ]
        .iter()
        .map(|v| v.len())
        .sum()
    }
}

/// All weights of a GPT-2 model: f32 as loaded, the matrices possibly packed.
#[derive(Debug, Clone)]
pub struct Weights {
    pub wte: Matrix,               // (vocab_size, n_embd) token embedding
    pub wpe: Vec<f32>,             // (n_positions, n_embd) position embedding
    pub layers: Vec<LayerWeights>, // (n_layer)
    pub ln_f_weight: Vec<f32>,     // (n_embd)
    pub ln_f_bias: Vec<f32>,       // (n_embd)
    /// `Some` only when the LM head is not tied to `wte`.
    pub lm_head: Option<Matrix>, // (vocab_size, n_embd)
}

impl Weights {
    /// The LM head matrix: `lm_head` when untied, else the token embedding.
    pub fn lm_head(&self) -> &Matrix {
        self.lm_head.as_ref().unwrap_or(&self.wte)
    }

    /// The weight matrices, in data-flow order (the LM head last when untied).
    pub fn matrices(&self) -> impl Iterator<Item = &Matrix> {
        let layers = self.layers.iter().flat_map(LayerWeights::matrices);
        std::iter::once(&self.wte).chain(layers).chain(self.lm_head.as_ref())
    }

    /// [`Weights::matrices`] with their checkpoint names (`wte.weight`,
    /// `h.0.attn.c_attn.weight`, …, `lm_head.weight` when untied).
    pub fn named_matrices(&self) -> Vec<(String, &Matrix)> {
        let layers = self.layers.iter().enumerate().flat_map(|(l, layer)| {
            let names = LayerWeights::MATRIX_NAMES.map(|n| format!("h.{l}.{n}"));
            names.into_iter().zip(layer.matrices())
        });
        let head = self.lm_head.as_ref().map(|m| ("lm_head.weight".to_string(), m));
        std::iter::once(("wte.weight".to_string(), &self.wte)).chain(layers).chain(head).collect()
    }

    /// The CPU engine's layout, for weights that never go to a GPU (the CPU
    /// worker, the CLI's CPU backend): every f16 matrix lifted
    /// ([`Matrix::lift_f16`]: the same values, no subnormal operand in its
    /// products) and the blocks' matrices in column panels
    /// ([`Matrix::into_panels`]: a decode step streams each one). The numbers
    /// are those of the loaded weights, bit for bit. The GPU engine refuses
    /// weights in this layout.
    pub fn use_cpu_layout(&mut self) {
        for layer in &mut self.layers {
            let blocks = [
                &mut layer.c_attn_weight,
                &mut layer.attn_proj_weight,
                &mut layer.c_fc_weight,
                &mut layer.mlp_proj_weight,
            ];
            for m in blocks {
                m.lift_f16();
                m.into_panels();
            }
        }
        self.wte.lift_f16();
        if let Some(head) = &mut self.lm_head {
            head.lift_f16();
        }
    }

    /// The format the matrices are stored in.
    pub fn format(&self) -> Format {
        self.wte.format
    }

    /// The same weights with every matrix in `format` (see [`Matrix::to_format`]).
    pub fn to_format(&self, format: Format) -> Weights {
        let m = |w: &Matrix| w.to_format(format);
        Weights {
            wte: m(&self.wte),
            wpe: self.wpe.clone(),
            layers: self
                .layers
                .iter()
                .map(|l| LayerWeights {
                    c_attn_weight: m(&l.c_attn_weight),
                    attn_proj_weight: m(&l.attn_proj_weight),
                    c_fc_weight: m(&l.c_fc_weight),
                    mlp_proj_weight: m(&l.mlp_proj_weight),
                    ..l.clone()
                })
                .collect(),
            ln_f_weight: self.ln_f_weight.clone(),
            ln_f_bias: self.ln_f_bias.clone(),
            lm_head: self.lm_head.as_ref().map(m),
        }
    }

    /// Bytes of every weight: the matrices in their format, the rest f32.
    pub fn bytes(&self) -> u64 {
        let vectors = self.layers.iter().map(LayerWeights::vector_len).sum::<usize>()
            + self.wpe.len()
            + self.ln_f_weight.len()
            + self.ln_f_bias.len();
        self.matrices().map(Matrix::bytes).sum::<u64>() + 4 * vectors as u64
    }

    /// Bytes of weights one decode step must read: every block's matrices
    /// and vectors, `ln_f`, the whole LM head, and one row each of the token
    /// embedding (when it is not the head) and of the position embedding.
    pub fn decode_bytes(&self) -> u64 {
        let e = self.ln_f_weight.len() as u64;
        let block = |l: &LayerWeights| {
            l.matrices().iter().map(|m| m.bytes()).sum::<u64>() + 4 * l.vector_len() as u64
        };
        let blocks: u64 = self.layers.iter().map(block).sum();
        let wte_row = match self.lm_head {
            Some(_) => self.wte.bytes() / self.wte.rows.max(1) as u64,
            None => 0,
        };
        blocks + self.lm_head().bytes() + wte_row + 4 * 3 * e
    }

    /// Reads and validates every tensor `config` calls for. With `keep_f16`,
    /// a checkpoint whose every matrix is stored as f16 keeps them so, word
    /// for word (the same words as packing their f32 values as f16), without
    /// an f32 copy of them: half the memory while loading a 124M model in a
    /// page. Otherwise, and for the vectors, values are read as f32.
    pub fn from_safetensors(bytes: &[u8], config: &Config, keep_f16: bool) -> Result<Weights> {
        let st =
            SafeTensors::deserialize(bytes).map_err(|e| EngineError::Safetensors(e.to_string()))?;
        let mut t = Reader { st: &st, f16: false };
        t.f16 = keep_f16 && t.all_f16(config);
        let (e, i, v) = (config.n_embd, config.n_inner, config.vocab_size);
        let mut layers = Vec::with_capacity(config.n_layer);
        for l in 0..config.n_layer {
            let p = |s: &str| format!("h.{l}.{s}");
            let [c_attn, attn_proj, c_fc, mlp_proj] = LayerWeights::MATRIX_NAMES.map(p);
            layers.push(LayerWeights {
                ln_1_weight: t.get(&p("ln_1.weight"), &[e])?,
                ln_1_bias: t.get(&p("ln_1.bias"), &[e])?,
                c_attn_weight: t.matrix(&c_attn, e, 3 * e, Channels::Cols)?,
                c_attn_bias: t.get(&p("attn.c_attn.bias"), &[3 * e])?,
                attn_proj_weight: t.matrix(&attn_proj, e, e, Channels::Cols)?,
                attn_proj_bias: t.get(&p("attn.c_proj.bias"), &[e])?,
                ln_2_weight: t.get(&p("ln_2.weight"), &[e])?,
                ln_2_bias: t.get(&p("ln_2.bias"), &[e])?,
                c_fc_weight: t.matrix(&c_fc, e, i, Channels::Cols)?,
                c_fc_bias: t.get(&p("mlp.c_fc.bias"), &[i])?,
                mlp_proj_weight: t.matrix(&mlp_proj, i, e, Channels::Cols)?,
                mlp_proj_bias: t.get(&p("mlp.c_proj.bias"), &[e])?,
            });
        }
        let lm_head = match config.tie_word_embeddings {
            true => None,
            false => Some(t.matrix_named("lm_head.weight", v, e, Channels::Rows)?),
        };
        Ok(Weights {
            wte: t.matrix("wte.weight", v, e, Channels::Rows)?,
            wpe: t.get("wpe.weight", &[config.n_positions, e])?,
            layers,
            ln_f_weight: t.get("ln_f.weight", &[e])?,
            ln_f_bias: t.get("ln_f.bias", &[e])?,
            lm_head,
        })
    }
}

/// Looks tensors up by their Hugging Face names and converts them to f32,
/// or (`f16`) keeps f16 matrices as they are stored.
struct Reader<'a> {
    st: &'a SafeTensors<'a>,
    f16: bool,
}

impl Reader<'_> {
    /// Whether every weight matrix `config` calls for is stored as f16.
    fn all_f16(&self, config: &Config) -> bool {
        let mut names = vec!["wte.weight".to_string()];
        for l in 0..config.n_layer {
            names.extend(LayerWeights::MATRIX_NAMES.map(|n| format!("h.{l}.{n}")));
        }
        if !config.tie_word_embeddings {
            names.push("lm_head.weight".into());
        }
        let stored = |name: &str| self.resolve(name).and_then(|n| self.st.tensor(&n).ok());
        names.iter().all(|n| stored(n).is_some_and(|t| t.dtype() == Dtype::F16))
    }

    /// A weight matrix under `name` (see [`get`](Self::get)), output channels along `channels`.
    fn matrix(&self, name: &str, rows: usize, cols: usize, channels: Channels) -> Result<Matrix> {
        let full = self.resolve(name).ok_or_else(|| missing(name))?;
        self.matrix_named(&full, rows, cols, channels)
    }

    /// A weight matrix under exactly `name`.
    fn matrix_named(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        channels: Channels,
    ) -> Result<Matrix> {
        if !self.f16 {
            return Ok(Matrix::from_f32(rows, cols, channels, self.exact(name, &[rows, cols])?));
        }
        let view = self.view(name, &[rows, cols])?;
        let bits = view.data().chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        if let Some((index, h)) = bits.enumerate().find(|(_, h)| h & 0x7c00 == 0x7c00) {
            let value = half::f16::from_bits(h).to_f32();
            return Err(EngineError::NonFinite { name: name.to_string(), index, value });
        }
        Ok(Matrix::from_f16_le(rows, cols, channels, view.data()))
    }

    /// `name` as saved by `GPT2Model`, or `transformer.name` as saved by `GPT2LMHeadModel`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        self.exact(&self.resolve(name).ok_or_else(|| missing(name))?, shape)
    }

    /// The name `name` is stored under, if it is.
    fn resolve(&self, name: &str) -> Option<String> {
        let prefixed = format!("transformer.{name}");
        [name.to_string(), prefixed].into_iter().find(|n| self.st.tensor(n).is_ok())
    }

    fn exact(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let view = self.view(name, shape)?;
        let values = to_f32(view.dtype(), view.data(), name)?;
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(EngineError::NonFinite { name: name.to_string(), index, value });
        }
        Ok(values)
    }

    /// The tensor stored under exactly `name`, checked to have `shape`.
    fn view(&self, name: &str, shape: &[usize]) -> Result<safetensors::tensor::TensorView<'_>> {
        let view = self.st.tensor(name).map_err(|_| missing(name))?;
        if view.shape() != shape {
            return Err(EngineError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                got: view.shape().to_vec(),
            });
        }
        Ok(view)
    }
}

fn missing(name: &str) -> EngineError {
    EngineError::MissingTensor { name: name.to_string() }
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

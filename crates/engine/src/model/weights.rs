//! [`Weights`]: a model's tensors as the engines read them (f32, row-major,
//! linear weights `[in, out]` as in GPT-2's Conv1D; the weight matrices as
//! [`Matrix`], which [`Weights::to_format`] packs). Read from a checkpoint
//! by `weights_read.rs`.

use crate::storage::format::Format;
use crate::storage::matrix::Matrix;
use crate::storage::quads::Dot8;

/// The weights of one transformer block. Linear weights are `[in, out]` (Conv1D).
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub ln_1_weight: Vec<f32>,    // (n_embd)
    pub ln_1_bias: Vec<f32>,      // (n_embd)
    pub c_attn_weight: Matrix,    // (n_embd, n_embd + 2 * kv_dim): q | k | v
    pub c_attn_bias: Vec<f32>,    // (n_embd + 2 * kv_dim)
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

    /// [`matrices`](Self::matrices), to lay out in place.
    pub fn matrices_mut(&mut self) -> [&mut Matrix; 4] {
        let LayerWeights { c_attn_weight, attn_proj_weight, c_fc_weight, mlp_proj_weight, .. } =
            self;
        [c_attn_weight, attn_proj_weight, c_fc_weight, mlp_proj_weight]
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
    /// ([`Matrix::into_panels`]: a decode step streams each one), an f32,
    /// int8 or (with AVX-512) int4 LM head in row panels ([`Matrix::into_row_panels`]). The numbers
    /// are those of the loaded weights, bit for bit. The GPU engine refuses
    /// weights in this layout.
    pub fn use_cpu_layout(&mut self) {
        for layer in &mut self.layers {
            for m in layer.matrices_mut() {
                m.lift_f16();
                // int8 panels have their AVX2 loop; wasm keeps int8 row-major,
                // whose SIMD128 loops were measured in the page's worker.
                let floats = matches!(m.format, Format::F32 | Format::F16 | Format::Bf16);
                if floats || cfg!(target_arch = "x86_64") {
                    m.into_panels();
                }
            }
        }
        self.wte.lift_f16();
        if let Some(head) = &mut self.lm_head {
            head.lift_f16();
        }
        // An f32 or int8 head in row panels where AVX2's loops read them, an
        // int4 head where AVX-512's do (AVX2 keeps `quant_avx2::head`'s
        // row-major loop; the page's SIMD128 loops read row-major rows).
        let head = self.lm_head.as_mut().unwrap_or(&mut self.wte);
        if cfg!(target_arch = "x86_64") && (head.format != Format::Int4 || avx512()) {
            head.into_row_panels();
        }
    }

    /// The CPU engine's 8-bit activations for int8 and int4 weights
    /// ([`fast::int8_dot`](crate::fast::int8_dot), `--activations int8`):
    /// the blocks' matrices in quad (int8) or oct (int4) panels, an int8 LM
    /// head in head quad panels and an int4 one in head oct panels, each multiplying
    /// its input quantised to 8 bits, in integers. Other numbers than the f32
    /// path's; the GPU engine refuses these weights. False (nothing changed)
    /// unless the weights are int8, int8-tensor or int4; a matrix whose
    /// columns are not whole panels, and an int4 head whose rows are not
    /// whole groups, keep the f32 path.
    pub fn use_int8_activations(&mut self) -> bool {
        let blocks = match self.format() {
            Format::Int4 => Dot8::Octs,
            f if f.takes_int8_activations() => Dot8::Quads,
            _ => return false,
        };
        for layer in &mut self.layers {
            for m in layer.matrices_mut() {
                m.use_int8_activations(blocks);
            }
        }
        self.lm_head.as_mut().unwrap_or(&mut self.wte).use_int8_activations(Dot8::Rows);
        true
    }

    /// Whether [`use_int8_activations`](Self::use_int8_activations) laid
    /// any matrix out for 8-bit activations.
    pub fn int8_activations(&self) -> bool {
        self.matrices().any(|m| m.int8_activations().is_some())
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
}

/// Whether the CPU has AVX-512 (F and BW, as `fast::parallel::avx512`,
/// which this module cannot import without an import circle), where
/// `fast::lm_head_rows` reads an int4 head in row panels.
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

#[cfg(not(target_arch = "x86_64"))]
fn avx512() -> bool {
    false
}

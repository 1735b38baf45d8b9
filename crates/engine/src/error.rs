//! The engine's one error type. Every message names what was wrong and what was
//! expected, so a user who picked the wrong file can act on it.

use thiserror::Error;

/// Everything that can go wrong between reading a model and producing logits.
#[derive(Debug, Error)]
pub enum EngineError {
    /// `config.json` could not be parsed, or a field is missing or absurd.
    #[error("config.json: {0}")]
    Config(String),

    /// The safetensors file is truncated, corrupt or has an oversized header.
    #[error("model.safetensors is not a valid safetensors file: {0}")]
    Safetensors(String),

    /// The model has only PyTorch's pickle file, which the engine does not read.
    #[error(
        "{location} has pytorch_model.bin but no model.safetensors: Decode Lab reads safetensors \
         only (a pickle file can run code when it is loaded). Most Hub repositories have \
         model.safetensors too; else convert with `python -c \"from transformers import \
         AutoModelForCausalLM as M; M.from_pretrained('DIR').save_pretrained('DIR')\"` \
         (saves model.safetensors)"
    )]
    PytorchOnly { location: String },

    /// The model is split over several safetensors files (the page's refusal).
    #[error(
        "{location} holds a sharded checkpoint (model.safetensors.index.json and \
         model-0000N-of-0000M.safetensors): the page reads one model.safetensors (the CLI \
         reads the shards). Save it as one file with `python -c \"from transformers import AutoModelForCausalLM as M; \
         M.from_pretrained('DIR').save_pretrained('DIR', max_shard_size='20GB')\"` (every \
         GPT-2 up to 1.5B parameters fits one file)"
    )]
    Sharded { location: String },

    /// A tensor the model needs is absent.
    #[error("model.safetensors has no tensor `{name}` (looked for `{name}` and `{prefix}{name}`)")]
    MissingTensor { name: String, prefix: &'static str },

    /// A tensor is present with the wrong shape.
    #[error("tensor `{name}` has shape {got:?}, expected {expected:?}")]
    Shape { name: String, expected: Vec<usize>, got: Vec<usize> },

    /// A tensor is stored in a dtype the engine cannot read.
    #[error("tensor `{name}` has dtype {got}, expected F32, F16 or BF16")]
    Dtype { name: String, got: String },

    /// A weight is NaN or infinite: the model would produce garbage.
    #[error("tensor `{name}` contains a non-finite value ({value}) at index {index}")]
    NonFinite { name: String, index: usize, value: f32 },

    /// The tokenizer file could not be loaded or used.
    #[error("tokenizer: {0}")]
    Tokenizer(String),

    /// A chat template could not be read or rendered (its own
    /// `raise_exception` message included).
    #[error("chat template: {0}")]
    ChatTemplate(String),

    /// A token id outside `0..vocab_size`.
    #[error("token id {id} is out of range: the vocabulary has {vocab_size} tokens")]
    TokenOutOfRange { id: u32, vocab_size: usize },

    /// An empty prompt: there is nothing to predict from.
    #[error("the prompt is empty: type at least one character")]
    EmptyPrompt,

    /// A forward pass was asked to run no token at all.
    #[error("no tokens to run: give at least one token id")]
    NoTokens,

    /// More tokens than the position table has rows.
    #[error("{got} tokens do not fit the context of {n_positions} positions")]
    ContextOverflow { got: usize, n_positions: usize },

    /// A rewind target past the current position.
    #[error("cannot rewind to position {to}: the session is only at {pos}")]
    Rewind { to: usize, pos: usize },

    /// No WebGPU / Vulkan / Metal adapter is available.
    #[error("no GPU adapter is available: {0}")]
    NoAdapter(String),

    /// The model does not fit one of the adapter's limits.
    #[error("the model does not fit this GPU: {what} needs {needed} but the adapter allows {allowed} (over by {over})", over = needed - allowed)]
    DeviceLimit { what: String, needed: u64, allowed: u64 },

    /// Any other failure reported by the GPU driver (validation, out of memory, lost device).
    #[error("GPU error: {0}")]
    Gpu(String),

    /// A generation setting outside its range.
    #[error("invalid setting: {0}")]
    Setting(String),

    /// A batch that cannot run as one step.
    #[error("cannot batch these sequences: {0}")]
    Batch(String),

    /// The CPU worker failed a request, or could not be reached.
    #[error("{0}")]
    Remote(String),

    /// Reading a model file from disk failed.
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },

    /// Writing a file (a generated model) failed.
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
}

/// Shorthand used across the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

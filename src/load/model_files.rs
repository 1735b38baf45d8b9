//! A model folder's files: fetched in order (the small ones first, a big
//! `model.safetensors` only after a yes), each missing one named, then parsed
//! with every error naming its file. Shared by every way a model is chosen
//! (`model=`, the picker), since they all end in a [`ModelSource`].

use engine::model::{
    ChatTemplate, Config, Family, JsBytes, Model, Tokenizer, Weights, WeightsChoice,
};
use js_sys::Uint8Array;

use crate::load::download::{BigDownload, CONFIRM_BYTES};
use crate::load::source::ModelSource;

/// Where loading stands (drives the progress bar).
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// What is happening, in words.
    pub what: String,
    /// Bytes fetched so far over every file.
    pub loaded: u64,
    /// Bytes expected over every file, once the server said.
    pub total: Option<u64>,
}

/// Why a load stopped.
#[derive(Debug)]
pub enum LoadError {
    Failed(String),
    /// A big download waits for the user's yes.
    Confirm(BigDownload),
}

impl From<String> for LoadError {
    fn from(e: String) -> LoadError {
        LoadError::Failed(e)
    }
}

/// The held-out passage in a model folder (optional): text the model never
/// trained on, which the quantization lesson scores.
pub const HELDOUT_FILE: &str = "heldout.txt";

/// Every file [`fetch_files`] may fetch (what a failed parse evicts).
pub const ALL_FILES: [&str; 7] = [
    "config.json",
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    TOKENIZER_CONFIG,
    CHAT_JINJA,
    "model.safetensors",
];

/// Where an instruction-tuned model keeps its chat template: in its
/// tokenizer's config, or (newer checkpoints) a file of its own.
const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
const CHAT_JINJA: &str = "chat_template.jinja";

/// A model folder's files as fetched.
pub struct Fetched {
    pub config: Vec<u8>,
    tokenizer: TokenizerFiles,
    /// `tokenizer_config.json` and `chat_template.jinja`, where there
    /// (Llama-family models only).
    chat: (Option<Vec<u8>>, Option<Vec<u8>>),
    /// `model.safetensors`, outside the WebAssembly memory: the page reads
    /// it a tensor at a time, and hands a copy to the CPU worker.
    pub weights: Uint8Array,
    /// Bytes over every file.
    pub bytes: u64,
}

/// `tokenizer.json`, or GPT-2's original pair.
enum TokenizerFiles {
    Json(Vec<u8>),
    VocabMerges(Vec<u8>, Vec<u8>),
}

/// Fetches `config.json`, the tokenizer (`tokenizer.json`, else `vocab.json`
/// + `merges.txt`) and `model.safetensors`, in that order (the small files
///   first, so a wrong folder fails before the big download, which waits for
///   a yes unless `confirmed`). A missing file is named; a folder with only
///   `pytorch_model.bin` is told why that is not enough.
pub async fn fetch_files(
    source: &ModelSource,
    confirmed: bool,
    weights: WeightsChoice,
    on_gpu: bool,
    progress: &impl Fn(Progress),
) -> Result<Fetched, LoadError> {
    let mut done = 0;
    let mut get = async |name: &str| -> Result<Option<Uint8Array>, String> {
        let report = |loaded, total: Option<u64>| {
            progress(Progress {
                what: format!("downloading {name}"),
                loaded: done + loaded,
                total: total.map(|t| done + t),
            })
        };
        let bytes = source.get_array(name, report).await?;
        done += bytes.as_ref().map_or(0, |b| u64::from(b.length()));
        Ok(bytes)
    };
    // The small files into the page's memory; the weights stay in their array.
    let small = |bytes: Option<Uint8Array>| bytes.map(|b| b.to_vec());
    let missing = |name: &str| missing(source, name);
    let config = small(get("config.json").await?).ok_or_else(|| missing("config.json"))?;
    // Fetched in this order: the small files first, so a wrong folder fails fast.
    let tokenizer = match small(get("tokenizer.json").await?) {
        Some(json) => TokenizerFiles::Json(json),
        None => {
            let vocab = small(get("vocab.json").await?).ok_or_else(|| missing("tokenizer.json"))?;
            let merges = small(get("merges.txt").await?).ok_or_else(|| missing("merges.txt"))?;
            TokenizerFiles::VocabMerges(vocab, merges)
        }
    };
    // GPT-2 has no chat template: its pages ask for no more files.
    let chat = match is_llama(&config) {
        true => {
            let tokenizer_config = small(get(TOKENIZER_CONFIG).await?);
            let in_config = tokenizer_config.as_ref().is_some_and(|c| holds_template(c));
            let jinja = match tokenizer_config.is_some() && !in_config {
                true => small(get(CHAT_JINJA).await?),
                false => None,
            };
            (tokenizer_config, jinja)
        }
        false => (None, None),
    };
    if !confirmed {
        ask_before_downloading(source, &config, weights, on_gpu).await?;
    }
    let Some(weights) = get("model.safetensors").await? else {
        let location = source.label();
        if matches!(source.size(engine::model::SHARD_INDEX).await, Ok(Some(_))) {
            return Err(engine::EngineError::Sharded { location }.to_string().into());
        }
        if matches!(source.size("pytorch_model.bin").await, Ok(Some(_))) {
            return Err(engine::EngineError::PytorchOnly { location }.to_string().into());
        }
        return Err(missing("model.safetensors").into());
    };
    Ok(Fetched { config, tokenizer, chat, weights, bytes: done })
}

/// Why a needed file is not there, in words.
fn missing(source: &ModelSource, name: &str) -> String {
    match source.is_local() {
        false => format!("could not fetch {}: HTTP 404 Not Found. {NEEDED}", source.place(name)),
        true => format!(
            "{name} is not among the files picked for {} in this browser (pick the folder again). {NEEDED}",
            source.label()
        ),
    }
}

/// Whether `config.json` is a Llama-family model's (one that may chat);
/// an unreadable config is `parse`'s to report.
fn is_llama(config: &[u8]) -> bool {
    let config = std::str::from_utf8(config).ok().and_then(|t| Config::from_json(t).ok());
    config.is_some_and(|c| matches!(c.family, Family::Llama(_)))
}

/// Whether a `tokenizer_config.json` holds the chat template itself (then
/// `chat_template.jinja` is not asked for).
fn holds_template(tokenizer_config: &[u8]) -> bool {
    let json = serde_json::from_slice::<serde_json::Value>(tokenizer_config).ok();
    json.is_some_and(|j| j.get("chat_template").is_some_and(|t| !t.is_null()))
}

/// The model's chat template, if it has one; an error names its file.
pub fn chat_template(source: &ModelSource, f: &Fetched) -> Result<Option<ChatTemplate>, String> {
    let (Some(config), jinja) = &f.chat else { return Ok(None) };
    let jinja = match jinja {
        Some(bytes) => Some(
            std::str::from_utf8(bytes)
                .map_err(|_| format!("{}: not UTF-8 text", source.place(CHAT_JINJA)))?,
        ),
        None => None,
    };
    let file = if jinja.is_some() { CHAT_JINJA } else { TOKENIZER_CONFIG };
    ChatTemplate::from_config(config, jinja).map_err(|e| format!("{}: {e}", source.place(file)))
}

/// Stops for the user's yes when `model.safetensors` is not in the cache
/// and over [`CONFIRM_BYTES`] (its size asked with a HEAD request), and
/// refuses a model that cannot fit the page at all. The memory is stated for
/// the backend the page found (`on_gpu`: WebGPU, else the CPU worker).
async fn ask_before_downloading(
    source: &ModelSource,
    config: &[u8],
    weights: WeightsChoice,
    on_gpu: bool,
) -> Result<(), LoadError> {
    let name = "model.safetensors";
    // An unreadable config is reported by `parse` with its file's name.
    let Some(config) = std::str::from_utf8(config).ok().and_then(|t| Config::from_json(t).ok())
    else {
        return Ok(());
    };
    // No HEAD request for a model that cannot come near the threshold (twice
    // its f32 size, for extra tensors such as old checkpoints' attention
    // masks): the bundled model's embeds on a course page ask nothing.
    if 8 * config.n_params() as u64 <= CONFIRM_BYTES || source.cached(name).await {
        return Ok(());
    }
    let Ok(Some(Some(bytes))) = source.size(name).await else { return Ok(()) };
    let coworker =
        crate::worker::no_coworker().is_none() && engine::cpu::coworker::worth_sharing(&config);
    let download = BigDownload::estimate(bytes, &config, weights, on_gpu, coworker);
    if let Some(refusal) = download.refusal() {
        return Err(LoadError::Failed(refusal));
    }
    match bytes > CONFIRM_BYTES {
        true => Err(LoadError::Confirm(download)),
        false => Ok(()),
    }
}

/// What a model folder must hold, for messages.
pub const NEEDED: &str =
    "A model folder needs config.json, model.safetensors, and tokenizer.json or vocab.json + merges.txt.";

/// Parses the fetched files; each error names its own file. Where `weights`
/// keeps f16, an f16 checkpoint's matrices stay f16 as stored; where it
/// names int8, int4 or bf16, each matrix is packed as it is read (neither
/// makes an f32 copy of the model).
pub fn parse(
    source: &ModelSource,
    f: &Fetched,
    weights: WeightsChoice,
) -> Result<(Model, Tokenizer), String> {
    let at = |name: &str| source.place(name);
    let text = std::str::from_utf8(&f.config)
        .map_err(|_| format!("{}: not UTF-8 text", at("config.json")))?;
    let config = Config::from_json(text).map_err(|e| format!("{}: {e}", at("config.json")))?;
    let tokenizer = match &f.tokenizer {
        TokenizerFiles::Json(json) => {
            Tokenizer::from_bytes(json).map_err(|e| format!("{}: {e}", at("tokenizer.json")))?
        }
        TokenizerFiles::VocabMerges(vocab, merges) => {
            Tokenizer::from_vocab_merges(vocab, merges)
                .map_err(|e| format!("{} + merges.txt: {e}", at("vocab.json")))?
        }
    };
    let file = JsBytes(f.weights.clone());
    let weights = Weights::from_files(&[&file], &config, weights)
        .map_err(|e| format!("{}: {e}", at("model.safetensors")))?;
    Ok((Model { config, weights }, tokenizer))
}

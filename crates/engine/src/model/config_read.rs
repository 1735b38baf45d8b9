//! `config.json` in Hugging Face form → a validated [`Config`], by its
//! `model_type`. First stop of the data flow: every size the engine
//! allocates comes from here, so absurd values are rejected before anything
//! is allocated.

use serde::Deserialize;

use super::config::{bad, Config};
use super::config_llama;
use super::llama::LLAMA_TYPES;
use crate::error::Result;

/// The one field that says which family's reader reads the rest.
#[derive(Deserialize)]
struct ModelType {
    model_type: Option<String>,
}

impl Config {
    /// Parses and validates the text of a `config.json`.
    pub fn from_json(text: &str) -> Result<Config> {
        let raw: ModelType =
            serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        // Other families (gpt_neox, phi, ...) have other layers and weight
        // names: refuse them by name rather than fail later on a missing tensor.
        match raw.model_type.as_deref() {
            None | Some("gpt2") => Config::from_gpt2_json(text),
            Some(t) if LLAMA_TYPES.contains(&t) => config_llama::from_json(text, t),
            Some(t) => Err(bad(format!(
                "`model_type` is \"{t}\": Decode Lab runs GPT-2 (\"gpt2\") and the Llama family \
                 (\"llama\", \"mistral\", \"qwen2\")"
            ))),
        }
    }
}

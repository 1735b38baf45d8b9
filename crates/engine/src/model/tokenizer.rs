//! Text ↔ token ids through the model's own `tokenizer.json` (Hugging Face
//! `tokenizers`, the same library that trained it), plus a streaming decoder
//! that never shows half a UTF-8 character.

use crate::error::{EngineError, Result};

/// A loaded `tokenizer.json`.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

impl Tokenizer {
    /// Parses the bytes of a `tokenizer.json`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Tokenizer> {
        // `tokenizers` panics (instead of erring) on a syntax error inside its
        // `decoder` object (found by the fuzz target `tokenizer_json`). Parsed
        // into a JSON value first, the text's syntax is checked whole, and the
        // tokenizer is then built from a value that has no syntax left to fail.
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            EngineError::Tokenizer(format!("tokenizer.json is not valid JSON: {e}"))
        })?;
        let inner: tokenizers::Tokenizer = serde_json::from_value(value)
            .map_err(|e| EngineError::Tokenizer(format!("cannot parse tokenizer.json: {e}")))?;
        Ok(Tokenizer { inner })
    }

    /// Number of ids the tokenizer can produce (including added tokens).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Text → ids, without adding special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| EngineError::Tokenizer(format!("cannot encode: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Ids → text. Bytes that do not form UTF-8 become U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| EngineError::Tokenizer(format!("cannot decode: {e}")))
    }

    /// The id of a token string such as `<|endoftext|>`, if the vocabulary has it.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }
}

/// Turns a stream of ids into a stream of text pieces. A piece is released only
/// once it decodes without a trailing U+FFFD, so a character split over several
/// byte-level tokens appears whole, once.
#[derive(Default)]
pub struct TextStream {
    /// Ids not yet fully released (the tail that may still change).
    pending: Vec<u32>,
    /// How many chars of `decode(pending)` have been released already.
    released: usize,
}

impl TextStream {
    /// Feeds one id; returns the text that became final, if any.
    pub fn push(&mut self, tokenizer: &Tokenizer, id: u32) -> Result<Option<String>> {
        self.pending.push(id);
        let text = tokenizer.decode(&self.pending)?;
        if text.ends_with('\u{FFFD}') {
            return Ok(None); // the last character is still incomplete
        }
        let piece: String = text.chars().skip(self.released).collect();
        // Keep only the last id as context: decoders may depend on the previous token.
        let last = *self.pending.last().expect("pending holds the id just pushed");
        self.pending = vec![last];
        self.released = tokenizer.decode(&self.pending)?.chars().count();
        Ok((!piece.is_empty()).then_some(piece))
    }
}

//! Text ↔ token ids through the model's own `tokenizer.json` (Hugging Face
//! `tokenizers`, the same library that trained it) or GPT-2's original pair
//! `vocab.json` + `merges.txt`, plus a streaming decoder that never shows half
//! a UTF-8 character.

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

    /// GPT-2's original files: `vocab.json` (token → id) and `merges.txt`
    /// (one merge `a b` per line, in rank order, after a `#version` line),
    /// as byte-level BPE with GPT-2's pre-tokenisation — the `tokenizer.json`
    /// that `transformers`' `GPT2TokenizerFast` builds from the same pair, with
    /// `<|endoftext|>` as its special token when the vocabulary has it.
    pub fn from_vocab_merges(vocab: &[u8], merges: &[u8]) -> Result<Tokenizer> {
        let bad = |m: String| EngineError::Tokenizer(m);
        let vocab: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(vocab)
            .map_err(|e| bad(format!("vocab.json is not a JSON object of token ids: {e}")))?;
        let merges = std::str::from_utf8(merges)
            .map_err(|_| bad("merges.txt is not UTF-8 text".to_string()))?;
        let merges: Vec<&str> =
            merges.lines().filter(|l| !l.starts_with("#version") && !l.trim().is_empty()).collect();
        if let Some((n, line)) = merges.iter().enumerate().find(|(_, l)| l.split(' ').count() != 2)
        {
            return Err(bad(format!("merges.txt line {}: `{line}` is not two tokens", n + 2)));
        }
        let eos = "<|endoftext|>";
        let added: Vec<serde_json::Value> = vocab
            .get(eos)
            .and_then(|id| id.as_u64())
            .map(|id| {
                serde_json::json!({ "id": id, "content": eos, "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": true, "special": true })
            })
            .into_iter()
            .collect();
        let byte_level = |prefix: bool, trim: bool| {
            serde_json::json!({ "type": "ByteLevel", "add_prefix_space": prefix,
                "trim_offsets": trim, "use_regex": true })
        };
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": null, "pre_tokenizer": byte_level(false, true),
            "post_processor": byte_level(true, false), "decoder": byte_level(true, true),
            "model": { "type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false,
                "byte_fallback": false, "vocab": vocab, "merges": merges },
        });
        let inner: tokenizers::Tokenizer = serde_json::from_value(json)
            .map_err(|e| bad(format!("vocab.json + merges.txt do not make a tokenizer: {e}")))?;
        Ok(Tokenizer { inner })
    }

    /// The tokenizer of a model directory (native only): `tokenizer.json`,
    /// else GPT-2's `vocab.json` + `merges.txt`.
    pub fn from_dir(dir: &std::path::Path) -> Result<Tokenizer> {
        use crate::model::{read, MAX_TOKENIZER_BYTES};
        let json = dir.join("tokenizer.json");
        if json.exists() {
            return Tokenizer::from_bytes(&read(&json, MAX_TOKENIZER_BYTES)?);
        }
        let (vocab, merges) = (dir.join("vocab.json"), dir.join("merges.txt"));
        if !vocab.exists() || !merges.exists() {
            return Err(EngineError::Tokenizer(format!(
                "{} has no tokenizer: it needs tokenizer.json, or vocab.json and merges.txt",
                dir.display()
            )));
        }
        let read = |p: &std::path::Path| read(p, MAX_TOKENIZER_BYTES);
        Tokenizer::from_vocab_merges(&read(&vocab)?, &read(&merges)?)
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

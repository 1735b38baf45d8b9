//! SentencePiece-style BPE as a tokenizer.json writes it (TinyLlama, Llama 2,
//! Mistral 7B): spaces become `▁`, one `▁` goes in front, the text is not
//! pre-split, characters are the symbols, and a character the vocabulary
//! lacks becomes its UTF-8 bytes as `<0xNN>` tokens (byte fallback) or
//! `<unk>`. Checked id for id against `tokenizers` (tests/tokenizer.rs,
//! fixtures from tools/golden/make_sentencepiece_golden.py).

use std::collections::HashMap;

use serde_json::Value;

/// SentencePiece's visible space.
pub const SPACE: char = '\u{2581}';

/// Where a `▁` is put in front of a segment (text between added tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepend {
    /// Every non-empty segment (a `Prepend` normalizer: the Hub's "legacy"
    /// files, so text after `<s>` gets one too).
    EverySegment,
    /// The segment at the start of the text, unless it starts with a space
    /// (a `Metaspace` pre-tokenizer, `prepend_scheme: "first"`).
    First,
    /// Every segment that does not start with a space (`"always"`).
    Always,
    /// None (`"never"`, or a `Replace` normalizer alone).
    Never,
}

/// The SentencePiece side of a BPE tokenizer.
#[derive(Clone, Debug)]
pub struct Spm {
    pub prepend: Prepend,
    /// Cut before every `▁` (a `Metaspace` with `split: true`).
    pub split: bool,
    /// Unknown characters as `<0xNN>` byte tokens.
    pub byte_fallback: bool,
    /// The `<unk>` id, where the model names one.
    pub unk: Option<u32>,
    /// A run of unknown characters is one `<unk>`.
    pub fuse_unk: bool,
}

impl Spm {
    /// The SentencePiece layout of a tokenizer.json, if it is one: a
    /// `Prepend` + `Replace` normalizer and no pre-tokenizer, or a
    /// `Metaspace` pre-tokenizer and no normalizer. `None`: not this style.
    pub fn from_json(json: &Value, vocab: &serde_json::Map<String, Value>) -> Option<Spm> {
        let kind = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_string);
        let normalizer = json.get("normalizer").filter(|v| !v.is_null());
        let pre = json.get("pre_tokenizer").filter(|v| !v.is_null());
        let (prepend, split) = match (normalizer, pre) {
            (Some(n), None) => (legacy_prepend(n)?, false),
            (None, Some(p)) if kind(p).as_deref() == Some("Metaspace") => metaspace(p)?,
            _ => return None,
        };
        let model = json.get("model")?;
        let flag = |name| model.get(name).and_then(Value::as_bool).unwrap_or(false);
        let unk = model.get("unk_token").and_then(Value::as_str);
        let unk = unk.and_then(|u| vocab.get(u)).and_then(Value::as_u64).map(|id| id as u32);
        let (byte_fallback, fuse_unk) = (flag("byte_fallback"), flag("fuse_unk"));
        Some(Spm { prepend, split, byte_fallback, unk, fuse_unk })
    }

    /// A segment as the vocabulary spells it: spaces as `▁`, the prefix
    /// where the scheme puts one (`at_start`: the segment begins the text).
    pub fn normalize(&self, segment: &str, at_start: bool) -> String {
        let text: String = segment.chars().map(|c| if c == ' ' { SPACE } else { c }).collect();
        let spaced = text.starts_with(SPACE);
        let prepend = match self.prepend {
            Prepend::EverySegment => !text.is_empty(),
            Prepend::First => at_start && !spaced,
            Prepend::Always => !spaced,
            Prepend::Never => false,
        };
        match prepend {
            true => format!("{SPACE}{text}"),
            false => text,
        }
    }

    /// The words BPE merges within: the whole text, or (`split`) cut before
    /// every `▁` but the first character.
    pub fn words<'a>(&self, text: &'a str) -> Vec<&'a str> {
        if !self.split {
            return vec![text];
        }
        let cuts = text.char_indices().filter(|&(at, c)| at > 0 && c == SPACE).map(|(at, _)| at);
        let mut words = Vec::new();
        let mut start = 0;
        for cut in cuts.chain(std::iter::once(text.len())) {
            words.extend((cut > start).then(|| &text[start..cut]));
            start = cut;
        }
        words
    }

    /// A word's first symbols: each character's id, else its bytes' ids
    /// (byte fallback), else `<unk>`.
    pub fn symbols(&self, word: &str, vocab: &HashMap<String, u32>) -> Result<Vec<u32>, String> {
        let mut ids = Vec::with_capacity(word.len());
        let mut last_unk = false;
        let mut buf = [0u8; 4];
        for c in word.chars() {
            let s = c.encode_utf8(&mut buf);
            if let Some(&id) = vocab.get(&*s) {
                ids.push(id);
                last_unk = false;
                continue;
            }
            let bytes = s.bytes().map(|b| vocab.get(&format!("<0x{b:02X}>")).copied());
            if let Some(bytes) = bytes.collect::<Option<Vec<u32>>>().filter(|_| self.byte_fallback)
            {
                ids.extend(bytes);
                last_unk = false;
                continue;
            }
            let unk = self.unk.ok_or_else(|| {
                format!("the vocabulary has no token for {c:?}, and no <unk> or byte fallback")
            })?;
            if !(last_unk && self.fuse_unk) {
                ids.push(unk);
            }
            last_unk = true;
        }
        Ok(ids)
    }

    /// A token's bytes: `<0xNN>` is that byte (with byte fallback), any other
    /// token its text with `▁` as a space.
    pub fn token_bytes(&self, token: &str) -> Vec<u8> {
        let byte = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'));
        let byte = byte.filter(|h| h.len() == 2 && self.byte_fallback);
        match byte.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) => vec![b],
            None => token.replace(SPACE, " ").into_bytes(),
        }
    }
}

/// A normalizer `Sequence` of `Prepend("▁")` (optional) and
/// `Replace(" ", "▁")`, as transformers' LlamaConverter writes it.
fn legacy_prepend(normalizer: &Value) -> Option<Prepend> {
    let parts = normalizer.get("normalizers").and_then(Value::as_array)?;
    let kind = |v: &Value| v.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let space = SPACE.to_string();
    let is_prepend = |v: &Value| {
        kind(v) == "Prepend" && v.get("prepend").and_then(Value::as_str) == Some(&space)
    };
    let is_replace = |v: &Value| {
        let pattern = v.get("pattern").and_then(|p| p.get("String")).and_then(Value::as_str);
        let content = v.get("content").and_then(Value::as_str);
        kind(v) == "Replace" && pattern == Some(" ") && content == Some(&space)
    };
    match &parts[..] {
        [p, r] if is_prepend(p) && is_replace(r) => Some(Prepend::EverySegment),
        [r] if is_replace(r) => Some(Prepend::Never),
        _ => None,
    }
}

/// A `Metaspace` pre-tokenizer's scheme and split (`add_prefix_space`:
/// tokenizers before 0.19, meaning "always").
fn metaspace(pre: &Value) -> Option<(Prepend, bool)> {
    let replacement = pre.get("replacement").and_then(Value::as_str);
    if replacement.is_some_and(|r| r != SPACE.to_string()) {
        return None;
    }
    let old = pre.get("add_prefix_space").and_then(Value::as_bool);
    let prepend = match (pre.get("prepend_scheme").and_then(Value::as_str), old) {
        (Some("first"), _) => Prepend::First,
        (Some("always"), _) | (None, Some(true)) => Prepend::Always,
        (Some("never"), _) | (None, Some(false)) => Prepend::Never,
        _ => return None,
    };
    let split = pre.get("split").and_then(Value::as_bool).unwrap_or(true);
    Some((prepend, split))
}

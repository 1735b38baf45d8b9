//! Text ↔ token ids through the model's own `tokenizer.json` (byte-level
//! BPE, what every GPT-2-family model ships) or GPT-2's original pair
//! `vocab.json` + `merges.txt`, plus a streaming decoder that never shows half
//! a UTF-8 character. The BPE itself is `bpe.rs`.

use std::collections::HashMap;

use serde_json::Value;

use super::bpe::{Bpe, Digits};
use super::split_pattern::SplitPattern;
use crate::error::{EngineError, Result};

/// A loaded tokenizer.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    bpe: Bpe,
}

fn bad(m: impl Into<String>) -> EngineError {
    EngineError::Tokenizer(m.into())
}

impl Tokenizer {
    /// Parses the bytes of a `tokenizer.json`: a `BPE` model with a
    /// `ByteLevel` pre-tokenizer, as GPT-2 models have; anything else is
    /// refused by name.
    pub fn from_bytes(bytes: &[u8]) -> Result<Tokenizer> {
        let json: Value = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("tokenizer.json is not valid JSON: {e}")))?;
        let model = json.get("model").filter(|m| m.is_object());
        let model = model.ok_or_else(|| bad("tokenizer.json has no `model` object"))?;
        let pre = json.get("pre_tokenizer").filter(|v| !v.is_null());
        let parts = pre_parts(pre)?;
        let pre = parts.byte_level;
        let nfc = check_byte_level_bpe(&json, model, pre)?;
        let flag = |v: Option<&Value>, name| v.and_then(|v| v.get(name)).and_then(Value::as_bool);
        let vocab = model.get("vocab").and_then(Value::as_object);
        let vocab = vocab.ok_or_else(|| bad("tokenizer.json's model has no `vocab` object"))?;
        let merges = model.get("merges").and_then(Value::as_array);
        let merges = merges.ok_or_else(|| bad("tokenizer.json's model has no `merges` list"))?;
        let merges = merges.iter().enumerate().map(|(i, m)| {
            merge_pair(m).ok_or_else(|| bad(format!("tokenizer.json merge {i} is not two tokens")))
        });
        let merges = merges.collect::<Result<Vec<_>>>()?;
        let options = Options {
            use_regex: flag(pre, "use_regex").unwrap_or(true),
            add_prefix_space: flag(pre, "add_prefix_space").unwrap_or(false),
            ignore_merges: flag(Some(model), "ignore_merges").unwrap_or(false),
            digits: parts.digits,
            split: parts.split,
            nfc,
        };
        let bpe = build(vocab, &merges, added_tokens(&json)?, options, "tokenizer.json")?;
        Ok(Tokenizer { bpe })
    }

    /// GPT-2's original files: `vocab.json` (token → id) and `merges.txt`
    /// (one merge `a b` per line, in rank order, after a `#version` line),
    /// as byte-level BPE with GPT-2's pre-tokenisation — the tokenizer that
    /// `transformers`' `GPT2TokenizerFast` builds from the same pair, with
    /// `<|endoftext|>` as its special token when the vocabulary has it.
    pub fn from_vocab_merges(vocab: &[u8], merges: &[u8]) -> Result<Tokenizer> {
        let vocab: serde_json::Map<String, Value> = serde_json::from_slice(vocab)
            .map_err(|e| bad(format!("vocab.json is not a JSON object of token ids: {e}")))?;
        let merges =
            std::str::from_utf8(merges).map_err(|_| bad("merges.txt is not UTF-8 text"))?;
        let lines = merges.lines().filter(|l| !l.starts_with("#version") && !l.trim().is_empty());
        let merges = lines
            .enumerate()
            .map(|(n, line)| match line.split(' ').collect::<Vec<_>>()[..] {
                [a, b] => Ok((a.to_string(), b.to_string())),
                _ => Err(bad(format!("merges.txt line {}: `{line}` is not two tokens", n + 2))),
            })
            .collect::<Result<Vec<_>>>()?;
        let eos = "<|endoftext|>";
        let added = vocab.get(eos).and_then(Value::as_u64).and_then(|id| u32::try_from(id).ok());
        let added = added.map(|id| (eos.to_string(), id)).into_iter().collect();
        let options = Options {
            use_regex: true,
            add_prefix_space: false,
            ignore_merges: false,
            digits: None,
            split: None,
            nfc: false,
        };
        let bpe = build(&vocab, &merges, added, options, "vocab.json + merges.txt")?;
        Ok(Tokenizer { bpe })
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

    /// Number of ids the tokenizer can produce (added tokens included): one
    /// more than the largest.
    pub fn vocab_size(&self) -> usize {
        self.bpe.tokens.len()
    }

    /// Text → ids, without adding special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.bpe.encode(text).map_err(|e| bad(format!("cannot encode: {e}")))
    }

    /// Ids → text. Bytes that do not form UTF-8 become U+FFFD; ids the
    /// tokenizer does not have are skipped.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.bpe.decode(ids)).into_owned())
    }

    /// The bytes token `id` stands for, counted (0 for an id it does not have):
    /// exact for byte-level BPE, where a text's bytes are its tokens' bytes.
    pub fn token_bytes(&self, id: u32) -> usize {
        self.bpe.decode(&[id]).len()
    }

    /// The bytes token `id` stands for (`None`: an id this tokenizer does not have).
    pub fn id_bytes(&self, id: u32) -> Option<Vec<u8>> {
        self.bpe.tokens.get(id as usize)?.as_ref()?;
        Some(self.bpe.decode(&[id]))
    }

    /// Whether `other` means the same bytes by every id (the same vocabulary,
    /// whatever its merges), or the first difference. Bytes, not decoded
    /// text: the tokens that hold part of a UTF-8 character all decode alone
    /// to U+FFFD, and two vocabularies that order them differently would
    /// read as the same.
    pub fn differs_from(&self, other: &Tokenizer) -> Option<VocabDiff> {
        let (a, b) = (self.vocab_size(), other.vocab_size());
        if a != b {
            return Some(VocabDiff::Size(a, b));
        }
        let id = (0..a as u32).find(|&id| self.id_bytes(id) != other.id_bytes(id))?;
        Some(VocabDiff::Id { id, a: self.id_bytes(id), b: other.id_bytes(id) })
    }

    /// The id of a token string such as `<|endoftext|>`, if the vocabulary has it.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        let added = self.bpe.added.iter().find(|(s, _)| s == token).map(|&(_, id)| id);
        added.or_else(|| self.bpe.vocab.get(token).copied())
    }
}

/// How two vocabularies differ (see [`Tokenizer::differs_from`]).
#[derive(Clone, Debug, PartialEq)]
pub enum VocabDiff {
    /// Their sizes (this one's, the other's).
    Size(usize, usize),
    /// The first id whose bytes differ (`None`: the id is not there).
    Id { id: u32, a: Option<Vec<u8>>, b: Option<Vec<u8>> },
}

impl VocabDiff {
    /// One clause, calling the two vocabularies `a` and `b`:
    /// `model A has 2048 tokens, model B 50257`.
    pub fn describe(&self, a: &str, b: &str) -> String {
        fn shown(bytes: &Option<Vec<u8>>) -> String {
            match bytes {
                None => "absent".into(),
                Some(v) => match std::str::from_utf8(v) {
                    Ok(text) => format!("{text:?}"),
                    Err(_) => format!("the bytes {v:02X?}"),
                },
            }
        }
        match self {
            VocabDiff::Size(na, nb) => format!("{a} has {na} tokens, {b} {nb}"),
            VocabDiff::Id { id, a: ta, b: tb } => {
                format!("id {id} is {} in {a} and {} in {b}", shown(ta), shown(tb))
            }
        }
    }
}

/// What a tokenizer.json's pre-tokenizer is made of: `ByteLevel`, alone
/// or after a `Digits` split (SmolLM2's) or a `Split` on Llama 3's or
/// Qwen2's pattern. Any other sequence or pattern is refused by name.
struct PreParts<'a> {
    byte_level: Option<&'a Value>,
    digits: Option<Digits>,
    split: Option<SplitPattern>,
}

fn pre_parts(pre: Option<&Value>) -> Result<PreParts<'_>> {
    let kind = |v: &Value| v.get("type").and_then(Value::as_str).unwrap_or("?").to_string();
    let alone = PreParts { byte_level: pre, digits: None, split: None };
    let Some(seq) = pre.filter(|p| kind(p) == "Sequence") else { return Ok(alone) };
    let parts = seq.get("pretokenizers").and_then(Value::as_array).map(Vec::as_slice);
    match parts.unwrap_or(&[]) {
        [digits, byte_level] if kind(digits) == "Digits" => {
            let each = digits.get("individual_digits").and_then(Value::as_bool).unwrap_or(false);
            let digits = Some(if each { Digits::Each } else { Digits::Runs });
            Ok(PreParts { byte_level: Some(byte_level), digits, split: None })
        }
        [split, byte_level] if kind(split) == "Split" => {
            let regex = split.get("pattern").and_then(|p| p.get("Regex")).and_then(Value::as_str);
            let behavior = split.get("behavior").and_then(Value::as_str);
            let invert = split.get("invert").and_then(Value::as_bool).unwrap_or(false);
            let pattern = regex.and_then(SplitPattern::from_regex);
            let Some(pattern) = pattern.filter(|_| behavior == Some("Isolated") && !invert) else {
                return Err(bad(format!(
                    "tokenizer.json splits on {}: Decode Lab reads Llama 3's and Qwen2's patterns \
                     (isolated)",
                    regex.map_or("no regex".into(), |r| format!("the pattern {r:?}"))
                )));
            };
            Ok(PreParts { byte_level: Some(byte_level), digits: None, split: Some(pattern) })
        }
        [single] => Ok(PreParts { byte_level: Some(single), digits: None, split: None }),
        other => {
            let names: Vec<String> = other.iter().map(kind).collect();
            Err(bad(format!(
                "tokenizer.json's pre_tokenizer is a Sequence of [{}]: Decode Lab reads \
                 ByteLevel, alone or after Digits or a Split",
                names.join(", ")
            )))
        }
    }
}

/// Refuses, by name, what is not GPT-2's byte-level BPE: another model or
/// pre-tokenizer, a normalizer, word prefixes or suffixes, byte fallback.
/// Returns whether text is normalised to NFC first (Qwen2's one normalizer).
fn check_byte_level_bpe(json: &Value, model: &Value, pre: Option<&Value>) -> Result<bool> {
    fn kind(v: Option<&Value>) -> Option<&str> {
        v.and_then(|v| v.get("type")).and_then(Value::as_str)
    }
    let why = "Decode Lab reads byte-level BPE (GPT-2's)";
    if let Some(t) = kind(Some(model)).filter(|t| *t != "BPE") {
        return Err(bad(format!("tokenizer.json's model is {t}: {why}")));
    }
    if kind(pre) != Some("ByteLevel") {
        let t = kind(pre).unwrap_or("none");
        return Err(bad(format!("tokenizer.json's pre_tokenizer is {t}: {why}")));
    }
    let nfc = match kind(json.get("normalizer")) {
        None => false,
        Some("NFC") => true,
        Some(t) => {
            return Err(bad(format!(
                "tokenizer.json has a {t} normalizer: {why}, which has none (or Qwen2's NFC)"
            )))
        }
    };
    for field in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if let Some(v) = model.get(field).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            return Err(bad(format!("tokenizer.json's {field} is {v:?}: {why}")));
        }
    }
    if model.get("byte_fallback").and_then(Value::as_bool) == Some(true) {
        return Err(bad(format!("tokenizer.json uses byte_fallback: {why}, which needs none")));
    }
    Ok(nfc)
}

/// `added_tokens` of a tokenizer.json: (content, id) pairs.
fn added_tokens(json: &Value) -> Result<Vec<(String, u32)>> {
    let added = json.get("added_tokens").and_then(Value::as_array);
    let added = added.map(Vec::as_slice).unwrap_or(&[]).iter().map(|t| {
        let content = t.get("content").and_then(Value::as_str).map(str::to_string);
        let id = t.get("id").and_then(Value::as_u64).and_then(|id| u32::try_from(id).ok());
        content.zip(id).ok_or_else(|| bad("an added token of tokenizer.json has no content or id"))
    });
    added.collect()
}

/// A merge as `"a b"` (tokenizers before 0.20) or `["a", "b"]`.
fn merge_pair(m: &Value) -> Option<(String, String)> {
    match m {
        Value::String(s) => {
            s.split_once(' ').filter(|(_, b)| !b.contains(' ')).map(|(a, b)| (a.into(), b.into()))
        }
        Value::Array(v) => match &v[..] {
            [Value::String(a), Value::String(b)] => Some((a.clone(), b.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// The pre-tokenizer's and model's flags.
struct Options {
    use_regex: bool,
    add_prefix_space: bool,
    ignore_merges: bool,
    digits: Option<Digits>,
    split: Option<SplitPattern>,
    nfc: bool,
}

/// Largest id a tokenizer may use: vocabularies beyond this are not GPT-2's,
/// and the id → token table stays a few MB.
const MAX_ID: u64 = 1 << 21;

fn build(
    vocab: &serde_json::Map<String, Value>,
    merges: &[(String, String)],
    mut added: Vec<(String, u32)>,
    options: Options,
    file: &str,
) -> Result<Bpe> {
    let mut ids = HashMap::with_capacity(vocab.len());
    for (token, id) in vocab {
        let id = id.as_u64().filter(|&id| id < MAX_ID);
        let id = id.ok_or_else(|| {
            bad(format!("{file}: the id of {token:?} is not a number below {MAX_ID}"))
        })?;
        ids.insert(token.clone(), id as u32);
    }
    added.retain(|(s, _)| !s.is_empty());
    if let Some((s, _)) = added.iter().find(|&&(_, id)| u64::from(id) >= MAX_ID) {
        return Err(bad(format!("{file}: the id of added token {s:?} is not below {MAX_ID}")));
    }
    let n = ids
        .values()
        .chain(added.iter().map(|(_, id)| id))
        .map(|&id| id as usize + 1)
        .max()
        .unwrap_or(0);
    let mut tokens = vec![None; n];
    for (token, &id) in ids.iter().chain(added.iter().map(|(t, id)| (t, id))) {
        tokens[id as usize] = Some(token.clone());
    }
    let mut merge_ids = HashMap::with_capacity(merges.len());
    for (rank, (a, b)) in merges.iter().enumerate() {
        let id = |t: &str| {
            ids.get(t).copied().ok_or_else(|| {
                bad(format!(
                    "{file}: merge {rank} ({a} {b}) uses {t:?}, which is not in the vocabulary"
                ))
            })
        };
        let merged = id(&format!("{a}{b}"))?;
        merge_ids.entry((id(a)?, id(b)?)).or_insert((rank as u32, merged));
    }
    // At one offset the longest added token wins (tokenizers' leftmost-longest).
    added.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    Ok(Bpe {
        vocab: ids,
        tokens,
        merges: merge_ids,
        added,
        use_regex: options.use_regex,
        add_prefix_space: options.add_prefix_space,
        ignore_merges: options.ignore_merges,
        digits: options.digits,
        split: options.split,
        nfc: options.nfc,
    })
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

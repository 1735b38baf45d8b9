//! Reading a tokenizer's files into a [`Bpe`]: a `tokenizer.json` (its
//! model, pre-tokenizer or SentencePiece layout, added tokens and
//! post-processor) or GPT-2's `vocab.json` + `merges.txt`. What is not read
//! is refused by name.

use std::collections::HashMap;

use serde_json::Value;

use super::bpe::{Bpe, Digits};
use super::post_processor::Template;
use super::sentencepiece::Spm;
use super::split_pattern::SplitPattern;
use crate::error::{EngineError, Result};

pub fn bad(m: impl Into<String>) -> EngineError {
    EngineError::Tokenizer(m.into())
}

/// A `tokenizer.json`'s BPE and the special tokens around a prompt.
pub fn read_json(bytes: &[u8]) -> Result<(Bpe, Template)> {
    let json: Value = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("tokenizer.json is not valid JSON: {e}")))?;
    let model = json.get("model").filter(|m| m.is_object());
    let model = model.ok_or_else(|| bad("tokenizer.json has no `model` object"))?;
    if let Some(t) = model.get("type").and_then(Value::as_str).filter(|t| *t != "BPE") {
        return Err(bad(format!("tokenizer.json's model is {t}: Decode Lab reads BPE")));
    }
    let vocab = model.get("vocab").and_then(Value::as_object);
    let vocab = vocab.ok_or_else(|| bad("tokenizer.json's model has no `vocab` object"))?;
    let merges = model.get("merges").and_then(Value::as_array);
    let merges = merges.ok_or_else(|| bad("tokenizer.json's model has no `merges` list"))?;
    let merges = merges.iter().enumerate().map(|(i, m)| {
        merge_pair(m).ok_or_else(|| bad(format!("tokenizer.json merge {i} is not two tokens")))
    });
    let merges = merges.collect::<Result<Vec<_>>>()?;
    let flag = |v: Option<&Value>, name| v.and_then(|v| v.get(name)).and_then(Value::as_bool);
    let ignore_merges = flag(Some(model), "ignore_merges").unwrap_or(false);
    let options = match Spm::from_json(&json, vocab) {
        Some(spm) => Options { ignore_merges, spm: Some(spm), ..Options::gpt2() },
        None => {
            let pre = json.get("pre_tokenizer").filter(|v| !v.is_null());
            let parts = pre_parts(pre)?;
            let pre = parts.byte_level;
            Options {
                use_regex: flag(pre, "use_regex").unwrap_or(true),
                add_prefix_space: flag(pre, "add_prefix_space").unwrap_or(false),
                ignore_merges,
                digits: parts.digits,
                split: parts.split,
                nfc: check_byte_level_bpe(&json, model, pre)?,
                spm: None,
            }
        }
    };
    let bpe = build(vocab, &merges, added_tokens(&json)?, options, "tokenizer.json")?;
    let template = Template::from_json(json.get("post_processor"));
    let template = template.map_err(|e| bad(format!("tokenizer.json cannot be read: {e}")))?;
    let beyond =
        template.prefix.iter().chain(&template.suffix).find(|&&id| id as usize >= bpe.tokens.len());
    if let Some(id) = beyond {
        return Err(bad(format!(
            "tokenizer.json's post_processor adds id {id}, which it has no token for"
        )));
    }
    Ok((bpe, template))
}

/// GPT-2's original files: `vocab.json` (token → id) and `merges.txt`
/// (one merge `a b` per line, in rank order, after a `#version` line).
pub fn read_vocab_merges(vocab: &[u8], merges: &[u8]) -> Result<Bpe> {
    let vocab: serde_json::Map<String, Value> = serde_json::from_slice(vocab)
        .map_err(|e| bad(format!("vocab.json is not a JSON object of token ids: {e}")))?;
    let merges = std::str::from_utf8(merges).map_err(|_| bad("merges.txt is not UTF-8 text"))?;
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
    build(&vocab, &merges, added, Options::gpt2(), "vocab.json + merges.txt")
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

/// Refuses, by name, what is not GPT-2's byte-level BPE: another
/// pre-tokenizer, a normalizer, word prefixes or suffixes, byte fallback.
/// Returns whether text is normalised to NFC first (Qwen2's one normalizer).
fn check_byte_level_bpe(json: &Value, model: &Value, pre: Option<&Value>) -> Result<bool> {
    fn kind(v: Option<&Value>) -> Option<&str> {
        v.and_then(|v| v.get("type")).and_then(Value::as_str)
    }
    let why = "Decode Lab reads byte-level BPE (GPT-2's) and SentencePiece-style BPE (Llama's)";
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
    spm: Option<Spm>,
}

impl Options {
    /// GPT-2's: its pattern, no prefix space, nothing before or around it.
    fn gpt2() -> Options {
        Options {
            use_regex: true,
            add_prefix_space: false,
            ignore_merges: false,
            digits: None,
            split: None,
            nfc: false,
            spm: None,
        }
    }
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
        spm: options.spm,
    })
}

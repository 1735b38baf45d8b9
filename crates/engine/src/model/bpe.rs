//! Byte-level BPE, GPT-2's tokenizer, as Hugging Face `tokenizers` runs it
//! for a `tokenizer.json` with a `ByteLevel` pre-tokenizer and a `BPE` model:
//! split out added tokens (`<|endoftext|>`), split the rest with GPT-2's
//! pattern (`pretokenize`), map each piece's bytes to printable characters,
//! then apply the merges lowest rank first (`bpe_merge.rs`); or the
//! SentencePiece style (`sentencepiece.rs`). Written here rather than linked
//! from `tokenizers` because GPT-2 needs only this path: the general library
//! was 60 % of the page's wasm. Checked id for id against `transformers` and
//! `tokenizers` (tests/tokenizer.rs, fixtures from tools/golden/make_tokenizer_golden.py).

use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

use super::bpe_merge::{merge, Merges};
use super::char_class::{class, Class};
use super::sentencepiece::Spm;
use super::split_pattern::SplitPattern;

/// A byte-level BPE vocabulary with its merges.
#[derive(Clone, Debug)]
pub struct Bpe {
    /// Token string (byte-level characters) → id.
    pub vocab: HashMap<String, u32>,
    /// id → token string, for decoding (`None` where no token has the id).
    pub tokens: Vec<Option<String>>,
    /// (left id, right id) → (rank, merged id).
    pub merges: Merges,
    /// Tokens matched whole before pre-tokenisation, longest first.
    pub added: Vec<(String, u32)>,
    /// Split on GPT-2's pattern (`use_regex`); else each segment is one piece.
    pub use_regex: bool,
    /// Prepend a space to text that does not start with one.
    pub add_prefix_space: bool,
    /// A piece that is itself a token is not merged (`ignore_merges`).
    pub ignore_merges: bool,
    /// A `Digits` pre-tokenizer before `ByteLevel` (SmolLM2's): numbers
    /// split from the text around them before GPT-2's pattern runs.
    pub digits: Option<Digits>,
    /// A `Split` pre-tokenizer before `ByteLevel` (Llama 3's, Qwen2's),
    /// in place of GPT-2's pattern.
    pub split: Option<SplitPattern>,
    /// Text is normalised to NFC first (Qwen2's `normalizer`).
    pub nfc: bool,
    /// SentencePiece-style in place of `ByteLevel` (TinyLlama's, Llama 2's):
    /// the flags above do not apply.
    pub spm: Option<Spm>,
}

/// How a `Digits` pre-tokenizer splits numbers out (`individual_digits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digits {
    /// Every digit its own piece.
    Each,
    /// A run of digits one piece.
    Runs,
}

impl Digits {
    /// `text` cut before and after every digit (`Each`) or run of digits
    /// (`Runs`), as `tokenizers` splits on `char::is_numeric`, isolated.
    pub fn split(self, text: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let mut start = 0;
        let mut last_numeric = None;
        for (at, c) in text.char_indices() {
            let numeric = c.is_numeric();
            let cut = match last_numeric {
                None => false,
                Some(prev) => prev != numeric || (numeric && self == Digits::Each),
            };
            if cut {
                parts.push(&text[start..at]);
                start = at;
            }
            last_numeric = Some(numeric);
        }
        if start < text.len() {
            parts.push(&text[start..]);
        }
        parts
    }
}

/// GPT-2's byte → character table: printable bytes map to themselves, the
/// rest to U+0100 onwards, so every token is printable text.
fn byte_chars() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[b as usize] = match printable {
            true => char::from(b),
            false => {
                next += 1;
                char::from_u32(next - 1).unwrap_or('\0')
            }
        };
    }
    table
}

/// The byte table both ways, built once: encode maps every byte through it
/// and decode every character back (per generated token, and per label the
/// distribution panel shows).
struct ByteTable {
    chars: [char; 256],
    bytes: HashMap<char, u8>,
}

fn byte_table() -> &'static ByteTable {
    static TABLE: OnceLock<ByteTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let chars = byte_chars();
        let bytes = chars.iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
        ByteTable { chars, bytes }
    })
}

/// Splits `text` as GPT-2's pattern does:
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
/// (alternatives tried in order at each position, each quantifier greedy).
pub fn pretokenize(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let run = |from: usize, want: Class| {
        (from..chars.len()).find(|&j| class(chars[j].1) != want).unwrap_or(chars.len())
    };
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let end = piece_end(text, &chars, i, &run);
        pieces.push(&text[byte_at(i)..byte_at(end)]);
        i = end;
    }
    pieces
}

/// Where the piece starting at char `i` ends (exclusive, in chars).
fn piece_end(
    text: &str,
    chars: &[(usize, char)],
    i: usize,
    run: &dyn Fn(usize, Class) -> usize,
) -> usize {
    const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
    let rest = &text[chars[i].0..];
    if let Some(c) = CONTRACTIONS.iter().find(|c| rest.starts_with(**c)) {
        return i + c.chars().count();
    }
    // ` ?X+` for X = letters, numbers, other: an optional space, then a run.
    let after_space = match chars[i].1 == ' ' && i + 1 < chars.len() {
        true => i + 1,
        false => i,
    };
    let first = class(chars[after_space].1);
    if first != Class::Space {
        return run(after_space, first);
    }
    // Whitespace: `\s+(?!\S)` leaves the last space before a non-space to
    // the next piece (so " world" keeps its space); `\s+` takes a lone one.
    let end = run(i, Class::Space);
    match end < chars.len() && end - i > 1 {
        true => end - 1,
        false => end,
    }
}

impl Bpe {
    /// The ids of `text`: added tokens matched first, then pieces, then merges.
    /// `Err` names a byte-level character the vocabulary lacks.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (before, added) = self.next_added(rest);
            let segment = &rest[..before];
            match &self.spm {
                Some(spm) => self.encode_spm(spm, segment, rest.len() == text.len(), &mut ids)?,
                None => self.encode_segment(segment, &mut ids)?,
            }
            match added {
                Some((len, id)) => {
                    ids.push(id);
                    rest = &rest[before + len..];
                }
                None => rest = "",
            }
        }
        Ok(ids)
    }

    /// The first added token in `text`: (its byte offset, Some((length, id)))
    /// — the longest at the earliest offset — or (text.len(), None).
    fn next_added(&self, text: &str) -> (usize, Option<(usize, u32)>) {
        let found = self
            .added
            .iter()
            .filter_map(|(s, id)| text.find(s.as_str()).map(|at| (at, s.len(), *id)));
        // Earliest first; at one offset the longest (`added` is longest first).
        match found.min_by_key(|&(at, len, _)| (at, usize::MAX - len)) {
            Some((at, len, id)) => (at, Some((len, id))),
            None => (text.len(), None),
        }
    }

    /// A segment between added tokens, SentencePiece-style (`at_start`: it
    /// begins the text).
    fn encode_spm(
        &self,
        spm: &Spm,
        segment: &str,
        at_start: bool,
        ids: &mut Vec<u32>,
    ) -> Result<(), String> {
        if segment.is_empty() {
            return Ok(());
        }
        let text = spm.normalize(segment, at_start);
        for word in spm.words(&text) {
            if let Some(&id) = self.vocab.get(word).filter(|_| self.ignore_merges) {
                ids.push(id);
                continue;
            }
            let mut symbols = spm.symbols(word, &self.vocab)?;
            merge(&mut symbols, &self.merges);
            ids.extend(symbols);
        }
        Ok(())
    }

    /// A segment between added tokens: split by `Digits` where there is
    /// one, then each part through `ByteLevel`.
    fn encode_segment(&self, segment: &str, ids: &mut Vec<u32>) -> Result<(), String> {
        let normalized: String;
        let segment = match self.nfc {
            true => {
                normalized = segment.nfc().collect();
                normalized.as_str()
            }
            false => segment,
        };
        let each = |parts: Vec<&str>, ids: &mut Vec<u32>| {
            parts.into_iter().try_for_each(|p| self.encode_part(p, ids))
        };
        match (self.split, self.digits) {
            (Some(split), _) => each(split.split(segment), ids),
            (None, Some(digits)) => each(digits.split(segment), ids),
            (None, None) => self.encode_part(segment, ids),
        }
    }

    /// `ByteLevel` on one part: the prefix space, GPT-2's pattern, bytes as
    /// characters, then the merges.
    fn encode_part(&self, segment: &str, ids: &mut Vec<u32>) -> Result<(), String> {
        if segment.is_empty() {
            return Ok(());
        }
        let prefixed;
        let segment = match self.add_prefix_space && !segment.starts_with(' ') {
            true => {
                prefixed = format!(" {segment}");
                prefixed.as_str()
            }
            false => segment,
        };
        let table = &byte_table().chars;
        let pieces = match self.use_regex {
            true => pretokenize(segment),
            false => vec![segment],
        };
        for piece in pieces {
            let word: String = piece.bytes().map(|b| table[b as usize]).collect();
            self.merge_word(&word, ids)?;
        }
        Ok(())
    }

    /// One piece's byte-level characters → ids, then the merges.
    fn merge_word(&self, word: &str, ids: &mut Vec<u32>) -> Result<(), String> {
        if self.ignore_merges {
            if let Some(&id) = self.vocab.get(word) {
                ids.push(id);
                return Ok(());
            }
        }
        let mut symbols = Vec::with_capacity(word.len());
        let mut buf = [0u8; 4];
        for c in word.chars() {
            let id = self.vocab.get(&*c.encode_utf8(&mut buf)).ok_or_else(|| {
                format!("the vocabulary has no token for the byte-level character {c:?}")
            })?;
            symbols.push(*id);
        }
        merge(&mut symbols, &self.merges);
        ids.extend(symbols);
        Ok(())
    }

    /// Ids → bytes: each token's characters mapped back through the byte
    /// table (a token with a character outside it, such as an added token,
    /// as its own UTF-8), or SentencePiece's way (`Spm::token_bytes`). An id
    /// no token has (a model's vocabulary may be padded past its
    /// tokenizer's) is skipped, as `tokenizers` skips it. Unlike
    /// `tokenizers`, the `▁` SentencePiece put before a text stays a space:
    /// a continuation's first token is decoded after its prompt, where that
    /// space belongs.
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        let back = &byte_table().bytes;
        let mut bytes = Vec::new();
        let tokens = ids.iter().filter_map(|&id| self.tokens.get(id as usize)?.as_ref());
        for token in tokens {
            if let Some(spm) = &self.spm {
                bytes.extend(spm.token_bytes(token));
                continue;
            }
            match token.chars().map(|c| back.get(&c).copied()).collect::<Option<Vec<u8>>>() {
                Some(b) => bytes.extend(b),
                None => bytes.extend(token.as_bytes()),
            }
        }
        bytes
    }
}

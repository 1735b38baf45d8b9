//! SentencePiece-style BPE (TinyLlama's, Llama 2's tokenizer.json) and the
//! special tokens a post-processor puts around a prompt, against the
//! `tokenizers` library (fixtures from tools/golden/make_sentencepiece_golden.py).
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::model::{TextStream, Tokenizer};

const LAYOUTS: [&str; 2] = ["legacy", "metaspace"];

fn layout(name: &str) -> Tokenizer {
    let path = common::fixtures().join("sentencepiece").join(name).join("tokenizer.json");
    Tokenizer::from_bytes(&std::fs::read(path).unwrap()).unwrap()
}

/// The 340 KB mixed corpus (CJK, emoji and rare letters fall back to
/// bytes): the library's ids with its BOS, id for id, and the text back.
#[test]
fn the_corpus_encodes_as_the_tokenizers_library_does() {
    let text =
        std::fs::read_to_string(common::fixtures().join("gpt2_tokenizer/corpus.txt")).unwrap();
    for name in LAYOUTS {
        let t = layout(name);
        let golden = common::fixtures().join("sentencepiece").join(name).join("ids.u16");
        let want: Vec<u32> = std::fs::read(golden)
            .unwrap()
            .chunks_exact(2)
            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
            .collect();
        let got = t.encode(&text).unwrap();
        let first_difference = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "{name}: first different id");
        assert_eq!(got.len(), want.len(), "{name}");
        let fallback = got.iter().filter(|&&id| (3..259).contains(&id)).count();
        assert!(fallback > 1000, "{name}: the corpus exercises byte fallback ({fallback} ids)");
        // BOS, then the text with the one `▁` SentencePiece put in front.
        assert_eq!(got[0], t.token_to_id("<s>").unwrap());
        assert_eq!(t.decode(&got[1..]).unwrap(), format!(" {text}"), "{name}");
    }
}

/// Short texts at the edges: leading spaces, empty text, special tokens in
/// the text (after which the legacy layout puts a `▁` and the Metaspace one
/// does not), a literal `▁`, text that looks like a byte token.
#[test]
fn edge_cases_encode_as_the_tokenizers_library_does() {
    for name in LAYOUTS {
        let t = layout(name);
        let path = common::fixtures().join("sentencepiece").join(name).join("cases.json");
        let cases: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        for case in cases.as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let want = common::json_ids(&case["ids"]);
            assert_eq!(t.encode(text).unwrap(), want, "{name}: {text:?}");
            assert_eq!(t.encode_plain(text).unwrap(), want[1..], "{name}: {text:?} without BOS");
            // The library's decode drops special tokens and the first space.
            let words: Vec<u32> = want.into_iter().filter(|&id| id > 2).collect();
            let ours = t.decode(&words).unwrap();
            let theirs = case["decoded"].as_str().unwrap();
            assert_eq!(ours.strip_prefix(' ').unwrap_or(&ours), theirs, "{name}: {text:?}");
        }
    }
}

/// A character spelled in byte tokens is shown whole, once.
#[test]
fn byte_fallback_streams_whole_characters() {
    let t = layout("legacy");
    let text = "你好 🙂 x";
    let ids = t.encode_plain(text).unwrap();
    assert!(ids.len() > text.chars().count(), "falls back to bytes: {ids:?}");
    let mut stream = TextStream::default();
    let mut shown = Vec::new();
    for &id in &ids {
        shown.extend(stream.push(&t, id).unwrap());
    }
    assert!(shown.iter().all(|p| !p.contains('\u{FFFD}')), "{shown:?}");
    assert_eq!(shown.concat(), format!(" {text}"));
}

/// GPT-2's post-processor (ByteLevel) adds nothing: a prompt's ids are its text's.
#[test]
fn gpt2_prompts_get_no_special_tokens() {
    let path = common::fixtures().join("golden/tiny_odd/tokenizer.json");
    let t = Tokenizer::from_bytes(&std::fs::read(path).unwrap()).unwrap();
    let text = "Hello world<|endoftext|>";
    assert_eq!(t.encode(text).unwrap(), t.encode_plain(text).unwrap());
}

/// What is not read is refused by name: another model, another
/// post-processor, a template whose token is missing or beyond the
/// vocabulary, a character with neither a token, byte fallback nor `<unk>`.
#[test]
fn what_is_not_read_is_refused_by_name() {
    let json =
        std::fs::read_to_string(common::fixtures().join("sentencepiece/legacy/tokenizer.json"))
            .unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let e = |v: &serde_json::Value| {
        Tokenizer::from_bytes(v.to_string().as_bytes()).expect_err("refused").to_string()
    };
    let mut roberta = value.clone();
    roberta["post_processor"] = serde_json::json!({"type": "RobertaProcessing"});
    assert!(e(&roberta).contains("post_processor is RobertaProcessing"), "{}", e(&roberta));
    let mut beyond = value.clone();
    beyond["post_processor"]["special_tokens"]["<s>"]["ids"] = serde_json::json!([999_999]);
    assert!(e(&beyond).contains("adds id 999999"), "{}", e(&beyond));
    let mut nameless = value.clone();
    nameless["post_processor"]["special_tokens"] = serde_json::json!({});
    assert!(e(&nameless).contains("uses \"<s>\" without its ids"), "{}", e(&nameless));
    let mut unigram = value.clone();
    unigram["model"]["type"] = serde_json::json!("Unigram");
    assert!(e(&unigram).contains("model is Unigram: Decode Lab reads BPE"), "{}", e(&unigram));
    value["model"]["byte_fallback"] = serde_json::json!(false);
    value["model"]["unk_token"] = serde_json::Value::Null;
    let strict = Tokenizer::from_bytes(value.to_string().as_bytes()).unwrap();
    let err = strict.encode("你").expect_err("refused").to_string();
    assert!(err.contains("no token for '你', and no <unk> or byte fallback"), "{err}");
}

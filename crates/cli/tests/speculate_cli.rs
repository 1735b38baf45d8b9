//! `generate --speculate K` (issue 35): with the target's own first blocks
//! as the draft, greedy text equals plain greedy decoding's on both engines,
//! and the run prints α, tokens per target pass and the wall time against
//! plain decoding; a draft without K (or K without a draft) is a clear error.

mod common;

use common::{backends, decode_lab, scratch};

fn bundled() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../www/models/shakespeare").to_string()
}

/// Greedy text after "ROMEO:" from the bundled model on `backend`, `max`
/// tokens, with `extra` flags: (stdout, stderr) of a successful run.
fn greedy(m: &str, backend: &str, max: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["generate", "--model", m, "--prompt", "ROMEO:", "--temperature", "0"];
    args.extend_from_slice(&["--max-tokens", max, "--backend", backend]);
    args.extend_from_slice(extra);
    let out = decode_lab(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (text(&out.stdout), text(&out.stderr))
}

/// The stderr of a CPU `generate` from the bundled model with `extra` flags,
/// which must fail.
fn refused(m: &str, extra: &[&str]) -> String {
    let mut args = vec!["generate", "--model", m, "--prompt", "ROMEO:", "--backend", "cpu"];
    args.extend_from_slice(extra);
    let out = decode_lab(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{extra:?}: {stderr}");
    stderr
}

#[test]
fn greedy_speculation_prints_the_plain_greedy_text_and_its_figures() {
    let m = bundled();
    for backend in backends() {
        let (plain, _) = greedy(&m, backend, "24", &[]);
        for (layers, k) in [("1", "2"), ("3", "4")] {
            let speculate = ["--draft-layers", layers, "--speculate", k];
            let (text, figures) = greedy(&m, backend, "24", &speculate);
            assert_eq!(text.trim_end(), plain.trim_end(), "{backend}, L = {layers}, K = {k}");
            assert!(
                figures.contains(&format!("K = {k}, draft its first {layers} blocks; α ")),
                "{figures}"
            );
            assert!(figures.contains("tokens per target pass"), "{figures}");
            assert!(figures.contains("the same text (greedy: must be the same)"), "{figures}");
        }
    }
    assert!(refused(&m, &["--draft-layers", "1"]).contains("give K (1 to 16)"));
    assert!(refused(&m, &["--speculate", "4"]).contains("--speculate needs a draft"));
    let too_deep = refused(&m, &["--speculate", "2", "--draft-layers", "9"]);
    assert!(too_deep.contains("1 to 3 of its 4"), "{too_deep}");
}

/// `--draft DIR`: another, smaller model sharing the target's tokenizer
/// drafts; greedy, the text is the target's own on both engines. A draft
/// whose ids mean other bytes is refused before anything runs: another
/// vocabulary, or the same one with two byte fragments exchanged (each alone
/// decodes to U+FFFD, so only the bytes tell them apart).
#[test]
fn a_draft_model_sharing_the_tokenizer_drafts_and_another_is_refused() {
    let m = bundled();
    let draft = scratch("draft-small");
    let d = draft.to_str().unwrap();
    let shape = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--n-positions", "256"];
    let mut args = vec!["random-model", "--out", d, "--seed", "3", "--tokenizer-from", &m];
    args.extend_from_slice(&shape);
    let made = decode_lab(&args);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for backend in backends() {
        let (plain, _) = greedy(&m, backend, "16", &[]);
        let (text, figures) = greedy(&m, backend, "16", &["--draft", d, "--speculate", "3"]);
        assert_eq!(text, plain, "{backend}: a random draft changes the speed, never the text");
        assert!(figures.contains(&format!("K = 3, draft {d}; α ")), "{figures}");
        assert!(figures.contains("the same text (greedy: must be the same)"), "{figures}");
    }
    let json = std::fs::read(draft.join("tokenizer.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let vocab = v["model"]["vocab"].as_object_mut().unwrap();
    let (a, b) = (vocab["Â"].clone(), vocab["Ã"].clone());
    vocab.insert("Â".into(), b);
    vocab.insert("Ã".into(), a);
    std::fs::write(draft.join("tokenizer.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let tiny = common::golden_dir("tiny_odd");
    for (other, want) in
        [(d, "is the bytes [C"), (tiny.to_str().unwrap(), "the target has 2048 tokens, the draft ")]
    {
        let stderr = refused(&m, &["--draft", other, "--speculate", "3"]);
        assert!(
            stderr.contains("the draft's tokenizer is not the target's") && stderr.contains(want),
            "{stderr}"
        );
    }
}

//! `generate --speculate K` (issue 35): with the target's own first blocks
//! as the draft, greedy text equals plain greedy decoding's on both engines,
//! and the run prints α, tokens per target pass and the wall time against
//! plain decoding; a draft without K (or K without a draft) is a clear error.

mod common;

use common::{backends, decode_lab};

fn bundled() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../www/models/shakespeare").to_string()
}

#[test]
fn greedy_speculation_prints_the_plain_greedy_text_and_its_figures() {
    let m = bundled();
    for backend in backends() {
        let generate = |extra: &[&str]| {
            let mut args =
                vec!["generate", "--model", &m, "--prompt", "ROMEO:", "--temperature", "0"];
            args.extend_from_slice(&["--max-tokens", "24", "--backend", backend]);
            args.extend_from_slice(extra);
            let out = decode_lab(&args);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            (
                String::from_utf8_lossy(&out.stdout).to_string(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        };
        let (plain, _) = generate(&[]);
        for (layers, k) in [("1", "2"), ("3", "4")] {
            let (text, figures) = generate(&["--draft-layers", layers, "--speculate", k]);
            assert_eq!(text.trim_end(), plain.trim_end(), "{backend}, L = {layers}, K = {k}");
            assert!(
                figures.contains(&format!("K = {k}, draft its first {layers} blocks; α ")),
                "{figures}"
            );
            assert!(figures.contains("tokens per target pass"), "{figures}");
            assert!(figures.contains("the same text (greedy: must be the same)"), "{figures}");
        }
    }
    let out = decode_lab(&[
        "generate",
        "--model",
        &m,
        "--prompt",
        "a",
        "--backend",
        "cpu",
        "--draft-layers",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("give K (1 to 16)"));
    let out = decode_lab(&[
        "generate",
        "--model",
        &m,
        "--prompt",
        "a",
        "--backend",
        "cpu",
        "--speculate",
        "4",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--speculate needs a draft"));
    let args = [
        "generate",
        "--model",
        &m,
        "--prompt",
        "a",
        "--backend",
        "cpu",
        "--speculate",
        "2",
        "--draft-layers",
        "9",
    ];
    let out = decode_lab(&args);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 to 3 of its 4"));
}

/// A fresh, empty folder under the target directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    let made = decode_lab(&[
        "random-model",
        "--out",
        d,
        "--n-layer",
        "1",
        "--n-head",
        "2",
        "--n-embd",
        "32",
        "--n-positions",
        "256",
        "--seed",
        "3",
        "--tokenizer-from",
        &m,
    ]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for backend in backends() {
        let generate = |extra: &[&str]| {
            let mut args =
                vec!["generate", "--model", &m, "--prompt", "ROMEO:", "--temperature", "0"];
            args.extend_from_slice(&["--max-tokens", "16", "--backend", backend]);
            args.extend_from_slice(extra);
            let out = decode_lab(&args);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
            (text(&out.stdout), text(&out.stderr))
        };
        let (plain, _) = generate(&[]);
        let (text, figures) = generate(&["--draft", d, "--speculate", "3"]);
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
        let out = decode_lab(&[
            "generate",
            "--model",
            &m,
            "--prompt",
            "ROMEO:",
            "--backend",
            "cpu",
            "--draft",
            other,
            "--speculate",
            "3",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{other}: {stderr}");
        assert!(
            stderr.contains("the draft's tokenizer is not the target's") && stderr.contains(want),
            "{stderr}"
        );
    }
}

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
    assert!(String::from_utf8_lossy(&decode_lab(&args).stderr).contains("1 to 3 of its 4"));
}

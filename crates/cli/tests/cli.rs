//! The `decode-lab` binary as automated checks use it: `logits` JSON against
//! the transformers golden file, `generate` determinism, errors as messages
//! with a non-zero exit (never a panic).

use std::path::PathBuf;
use std::process::{Command, Output};

fn golden_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden").join(name)
}

fn decode_lab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_decode-lab")).args(args).output().expect("binary runs")
}

/// Backends to exercise: the GPU one only where an adapter exists (or CI demands one).
fn backends() -> Vec<&'static str> {
    let probe = decode_lab(&[
        "logits",
        "--model",
        golden_dir("hub_names").to_str().unwrap(),
        "--tokens",
        "1",
        "--backend",
        "gpu",
    ]);
    if probe.status.success() {
        vec!["cpu", "gpu"]
    } else if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but the GPU backend failed: {}", String::from_utf8_lossy(&probe.stderr));
    } else {
        eprintln!("\n*** GPU CLI TESTS SKIPPED: {} ***\n", String::from_utf8_lossy(&probe.stderr));
        vec!["cpu"]
    }
}

fn golden_rows(name: &str, key: &str) -> (Vec<u32>, Vec<f32>) {
    let bytes = std::fs::read(golden_dir(name).join("golden.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let n = key.rsplit('_').next().unwrap();
    let read = |k: &str| st.tensor(k).unwrap().data().to_vec();
    let ids: Vec<u32> = read(&format!("tokens_{n}"))
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as u32)
        .collect();
    let logits = read(key).chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    (ids, logits)
}

#[test]
fn logits_json_matches_transformers_in_both_modes() {
    for backend in backends() {
        for mode in ["prefill", "decode"] {
            let (ids, want) = golden_rows("tiny_odd", &format!("{mode}_17"));
            let tokens: Vec<String> = ids.iter().map(u32::to_string).collect();
            let out = decode_lab(&[
                "logits",
                "--model",
                golden_dir("tiny_odd").to_str().unwrap(),
                "--tokens",
                &tokens.join(","),
                "--backend",
                backend,
                "--mode",
                mode,
            ]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let rows = json["logits"].as_array().unwrap();
            assert_eq!(rows.len(), 17, "one row per input token");
            let got: Vec<f32> = rows
                .iter()
                .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32))
                .collect();
            assert_eq!(got.len(), 17 * 1000);
            let err = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f32::max);
            let scale = want.iter().map(|w| w.abs()).fold(0.0, f32::max);
            assert!(err / scale <= 1e-4, "{backend} {mode}: relative error {}", err / scale);
        }
    }
}

#[test]
fn generate_is_deterministic_for_a_seed() {
    let model = golden_dir("tiny_odd");
    for backend in backends() {
        let run = |seed: &str, t: &str| {
            let out = decode_lab(&[
                "generate",
                "--model",
                model.to_str().unwrap(),
                "--prompt",
                "To be",
                "--max-tokens",
                "20",
                "--temperature",
                t,
                "--seed",
                seed,
                "--backend",
                backend,
            ]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let a = run("7", "0.9");
        assert!(a.starts_with("To be") && a.len() > "To be\n".len(), "{a:?}");
        assert_eq!(a, run("7", "0.9"), "{backend}: same seed, same text");
        assert_eq!(run("1", "0"), run("2", "0"), "{backend}: greedy ignores the seed");
    }
}

#[test]
fn gpu_and_cpu_generate_the_same_greedy_text() {
    let b = backends();
    if b.len() < 2 {
        return;
    }
    let model = golden_dir("tiny_odd");
    let texts: Vec<_> = b
        .iter()
        .map(|backend| {
            decode_lab(&[
                "generate",
                "--model",
                model.to_str().unwrap(),
                "--prompt",
                "Café",
                "--max-tokens",
                "30",
                "--temperature",
                "0",
                "--backend",
                backend,
            ])
            .stdout
        })
        .collect();
    assert_eq!(texts[0], texts[1]);
}

#[test]
fn errors_are_messages_with_a_failing_exit() {
    let model = golden_dir("tiny_odd");
    let m = model.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["logits", "--model", "/nonexistent", "--tokens", "1", "--backend", "cpu"],
            "cannot read /nonexistent/config.json",
        ),
        (
            &["logits", "--model", m, "--tokens", "1,5000", "--backend", "cpu"],
            "token id 5000 is out of range",
        ),
        (&["generate", "--model", m, "--prompt", "", "--backend", "cpu"], "prompt is empty"),
        (
            &["generate", "--model", m, "--prompt", "x", "--temperature", "-1", "--backend", "cpu"],
            "temperature must be a number ≥ 0",
        ),
    ];
    for (args, want) in cases {
        let out = decode_lab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want) && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn bench_reports_one_submit_per_decode_token() {
    for backend in backends() {
        let out = decode_lab(&[
            "bench",
            "--model",
            golden_dir("tiny_odd").to_str().unwrap(),
            "--prompt-len",
            "8",
            "--tokens",
            "8",
            "--backend",
            backend,
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("tokens/s"), "{text}");
        if backend == "gpu" {
            assert!(text.contains("1.00 submits"), "{text}");
            assert!(text.contains("4000 bytes read back"), "{text}"); // vocab 1000 × f32
        }
    }
}

#[test]
fn generate_with_every_pipeline_flag_is_deterministic() {
    let model = golden_dir("tiny_odd");
    let m = model.to_str().unwrap();
    let flags = [
        "--temperature",
        "0.9",
        "--top-k",
        "40",
        "--top-p",
        "0.95",
        "--min-p",
        "0.02",
        "--repetition-penalty",
        "1.3",
        "--frequency-penalty",
        "0.2",
        "--presence-penalty",
        "0.1",
        "--no-repeat-ngram",
        "3",
        "--stop",
        "zzz",
        "--seed",
        "5",
    ];
    let run = |extra: &[&str]| {
        let mut args = vec![
            "generate",
            "--model",
            m,
            "--prompt",
            "To be",
            "--max-tokens",
            "24",
            "--backend",
            "cpu",
        ];
        args.extend_from_slice(&flags);
        args.extend_from_slice(extra);
        let out = decode_lab(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    assert_eq!(run(&[]), run(&[]), "same seed, same bytes");
    let beams = run(&["--beams", "3"]);
    assert!(String::from_utf8(beams.clone()).unwrap().starts_with("To be"));
    assert_eq!(beams, run(&["--beams", "3"]), "beam search is deterministic");
}

#[test]
fn sample_reproduces_the_course_example_as_json() {
    let out = decode_lab(&[
        "sample",
        "--logits",
        "3,2,1,0.5,0.1",
        "--labels",
        "the,a,an,this,some",
        "--temperature",
        "0.5",
        "--top-k",
        "3",
        "--seed",
        "1",
        "--draws",
        "5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fin: Vec<f64> =
        json["final"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    // softmax([3, 2, 1] / 0.5), renormalised over the three kept tokens (Python's math.exp).
    let want = [0.866813332, 0.117310428, 0.01587624];
    for (g, w) in fin.iter().zip(want) {
        assert!((g - w).abs() < 1e-8, "{fin:?}");
    }
    assert_eq!(&fin[3..], &[0.0, 0.0]);
    assert_eq!(json["kept"], serde_json::json!([true, true, true, false, false]));
    let names: Vec<&str> =
        json["stages"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["processors", "temperature", "top_k", "top_p", "min_p"]);
    assert_eq!(json["stages"][2]["removed"], serde_json::json!([3, 4]));
    assert_eq!(json["draws"].as_array().unwrap().len(), 5);
}

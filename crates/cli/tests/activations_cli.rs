//! `--activations int8`: the CPU engine's 8-bit activations for int8
//! weights, as a user runs them: text that repeats byte for byte, logits
//! near the f32 path's but not equal, a clear refusal where the option
//! cannot apply (other formats, the GPU), and the bench's prefill figure.

mod common;

use std::path::PathBuf;

use common::decode_lab;

fn bundled() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    dir.to_str().unwrap().to_string()
}

#[test]
fn int8_activations_run_on_the_cpu_and_repeat_byte_for_byte() {
    let model = bundled();
    let generate = |activations: &str| {
        let args = ["generate", "--model", &model, "--backend", "cpu", "--weights", "int8"];
        let rest = ["--prompt", "ROMEO:", "--max-tokens", "24", "--seed", "7"];
        let out = decode_lab(&[&args[..], &rest, &["--activations", activations]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let text = generate("int8");
    assert!(text.len() > "ROMEO:".len(), "{}", String::from_utf8_lossy(&text));
    assert_eq!(generate("int8"), text, "same model, prompt, settings and seed: same text");
    let logits = |activations: &str| {
        let args = ["logits", "--model", &model, "--tokens", "5,6,7,8", "--backend", "cpu"];
        let out =
            decode_lab(&[&args[..], &["--weights", "int8", "--activations", activations]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut numbers = Vec::new();
        collect(&v, &mut numbers);
        numbers
    };
    let (f32_path, int8_path) = (logits("f32"), logits("int8"));
    assert_eq!(f32_path.len(), int8_path.len());
    let largest = f32_path.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = f32_path.iter().zip(&int8_path).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(err > 0.0 && err < 0.05 * largest, "max |Δlogit| {err} of {largest}");
}

fn collect(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect(v, out)),
        serde_json::Value::Object(o) => o.values().for_each(|v| collect(v, out)),
        _ => {}
    }
}

#[test]
fn int8_activations_refuse_other_weights_and_the_gpu() {
    let model = bundled();
    let run = |extra: &[&str]| {
        let args = ["generate", "--model", &model, "--prompt", "ROMEO:", "--max-tokens", "2"];
        let out = decode_lab(&[&args[..], extra, &["--activations", "int8"]].concat());
        assert!(!out.status.success(), "{extra:?} ran");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let err = run(&["--backend", "cpu", "--weights", "f16"]);
    assert!(
        err.contains("8-bit activations multiply int8 or int4 weights: these are f16"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let err = run(&["--backend", "gpu", "--weights", "int8"]);
    assert!(err.contains("--activations int8 is the CPU engine's"), "{err}");
}

/// The bench's prefill figure is the median of three timed passes, each
/// listed in the order run (int4 with int8 activations on two threads: the
/// first pass after the warm-up at times ran 1.3–2× the later ones).
#[test]
fn the_bench_reports_the_median_of_three_prefill_passes() {
    let model = bundled();
    let args = ["bench", "--model", &model, "--backend", "cpu", "--weights", "int4"];
    let out = decode_lab(
        &[&args[..], &["--activations", "int8", "--prompt-len", "8", "--tokens", "2"]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("prefill")).expect("a prefill line");
    let figure = line.split_whitespace().nth(1).expect("a figure");
    let passes =
        line.split_once("passes: ").and_then(|(_, p)| p.strip_suffix(" ms in the order run"));
    let mut passes: Vec<&str> = passes.expect("the passes").split(", ").collect();
    assert_eq!(passes.len(), 3, "{line}");
    passes.sort_by(|a, b| a.parse::<f64>().unwrap().total_cmp(&b.parse().unwrap()));
    assert_eq!(passes[1], figure, "{line}");
}

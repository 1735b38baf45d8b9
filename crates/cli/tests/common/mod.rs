//! Shared by the CLI's test binaries: the binary, the golden models, the backends.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn golden_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden").join(name)
}

pub fn decode_lab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_decode-lab")).args(args).output().expect("binary runs")
}

/// `decode-lab bench` on the golden tiny_odd model with an 8-token prompt, and `extra` flags.
pub fn bench_tiny(extra: &[&str]) -> Output {
    let model = golden_dir("tiny_odd");
    let mut args = vec!["bench", "--model", model.to_str().unwrap(), "--prompt-len", "8"];
    args.extend_from_slice(extra);
    decode_lab(&args)
}

/// Backends to exercise: the GPU one only where an adapter exists (or CI demands one).
pub fn backends() -> Vec<&'static str> {
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

//! Shared by the CLI's test binaries: the binary, the golden models, the backends.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::process::{Command, Output};

/// A fresh, empty folder under the target directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

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

/// Backends to exercise: the CPU, and the GPU, whose failure to open fails
/// the test (a machine without an adapter may skip the GPU, loudly, with
/// `DECODE_LAB_GPU_TESTS=skip`; `./tools/dev test` never does).
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
    let why = String::from_utf8_lossy(&probe.stderr);
    if probe.status.success() {
        vec!["cpu", "gpu"]
    } else if std::env::var("DECODE_LAB_GPU_TESTS").as_deref() == Ok("skip") {
        eprintln!("\n*** GPU CLI TESTS SKIPPED (DECODE_LAB_GPU_TESTS=skip): {why} ***\n");
        vec!["cpu"]
    } else {
        panic!(
            "the GPU backend failed, so the GPU tests cannot run: {why}. Install \
             mesa-vulkan-drivers (lavapipe), or set DECODE_LAB_GPU_TESTS=skip on this machine"
        );
    }
}

/// Runs `test` (a test of this binary, by its exact name) in a child process
/// that can see no adapter: Vulkan without a driver and no other backend.
/// Returns whether it passed and what it printed.
pub fn run_without_adapter(test: &str) -> (bool, String) {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--test-threads", "1"])
        .env("WGPU_BACKEND", "vulkan")
        .env("VK_ICD_FILENAMES", "/nonexistent/decode-lab-no-driver.json")
        .env("VK_DRIVER_FILES", "/nonexistent/decode-lab-no-driver.json")
        .env_remove("DECODE_LAB_GPU_TESTS")
        .output()
        .expect("the test binary runs");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

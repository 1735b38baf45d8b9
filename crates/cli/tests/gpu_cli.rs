//! The `decode-lab` binary on the GPU and in the bench: the self-test's
//! report, one submit per decode token, the kernel chooser on a short
//! context, quiet GPU runs and CPU runs that load no GPU library, and the
//! batch bench's labels.

mod common;

use std::path::PathBuf;

use common::{backends, bench_tiny, decode_lab, golden_dir, scratch};

#[test]
fn selftest_passes_on_the_gpu_and_prints_the_report() {
    if !backends().contains(&"gpu") {
        return;
    }
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    let out = decode_lab(&["selftest", "--model", model.to_str().unwrap(), "--steps", "8"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("Decode Lab self-test: PASS\nadapter: "), "{text}");
    assert!(
        text.contains("model (8 greedy steps, f16 weights, GPU vs CPU engine): pass"),
        "{text}"
    );
    // On a software adapter (CI's lavapipe) `auto` is the cpu profile, untimed.
    if text.contains("llvmpipe") {
        assert!(text.contains("kernels: the cpu profile"), "{text}");
        assert!(text.contains("kernels chosen: cpu (the adapter is a CPU)"), "{text}");
    }
    // The real GPUs' kernels, asked for by name, pass here too.
    let m = model.to_str().unwrap();
    let split = decode_lab(&["selftest", "--model", m, "--steps", "4", "--kernels", "gpu-16"]);
    let text = String::from_utf8_lossy(&split.stdout);
    assert!(split.status.success(), "{text}{}", String::from_utf8_lossy(&split.stderr));
    assert!(
        text.contains("kernels: the gpu-16 profile") && text.contains("ln_qkv_split"),
        "{text}"
    );
    let bad = decode_lab(&["selftest", "--model", model.to_str().unwrap(), "--steps", "0"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--steps must be 1 to 1024, got 0"));
    let bad = decode_lab(&["selftest", "--model", m, "--kernels", "gpu-7"]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains(
            "not a kernel choice (one of auto, cpu, gpu, gpu-1, gpu-2, gpu-4, gpu-8, gpu-16)"
        ),
        "{stderr}"
    );
}

#[test]
fn bench_reports_one_submit_per_decode_token() {
    for backend in backends() {
        let out = bench_tiny(&["--tokens", "8", "--backend", backend]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("tokens/s"), "{text}");
        // 16 positions × 2 layers × 48 dims × K and V × 4 bytes, of a 64-position cache.
        assert!(text.contains("kv cache in use    12288 bytes (49152 allocated"), "{text}");
        // The share of the device's read rate, on either engine.
        assert!(text.contains("% of this device's read rate"), "{text}");
        if backend == "gpu" {
            let software = text.contains("llvmpipe");
            assert!(
                !software || text.contains("kernels            cpu (the adapter is a CPU)"),
                "{text}"
            );
            assert!(text.contains("cost record") && text.contains("ln_qkv "), "{text}");
            assert!(text.contains("1.00 submits"), "{text}");
            // vocab 1000 × f32, and two u64 timestamps where the device has them.
            let timed = text.contains("(timestamp queries;");
            let read = if timed { "4016 bytes read back" } else { "4000 bytes read back" };
            assert!(text.contains(read), "{text}");
            assert!(timed || text.contains("gpu time           not offered"), "{text}");
        } else {
            assert!(text.contains("gpu time           none: the CPU engine"), "{text}");
        }
    }
}

/// `--kernels gpu` times the gpu profile's layouts on any model that runs in
/// a profile by name, however short its context (8 positions, and 1), and
/// keeps the fastest; the trial goes back to the end of its prompt when the
/// context is full.
#[test]
fn the_kernel_chooser_times_models_with_a_short_context() {
    if !backends().contains(&"gpu") {
        return;
    }
    for positions in ["8", "1"] {
        let dir = scratch(&format!("context-{positions}"));
        let d = dir.to_str().unwrap();
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
            "--vocab-size",
            "64",
            "--n-positions",
            positions,
        ]);
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        let out = decode_lab(&["logits", "--model", d, "--tokens", "3", "--kernels", "gpu"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "n_positions {positions}: {stderr}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["logits"][0].as_array().map(Vec::len), Some(64), "{json}");
    }
    // Made above, kept: the bench times within the 8 positions too.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("context-8");
    let d = dir.to_str().unwrap();
    let out = decode_lab(&[
        "bench",
        "--model",
        d,
        "--kernels",
        "gpu",
        "--prompt-len",
        "4",
        "--tokens",
        "4",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| l.starts_with("kernels ")).expect("a kernels line");
    assert!(line.contains("(timed: gpu-2 ") && line.contains("gpu-8 "), "{line}");
    assert!(!line.contains("failed"), "{line}");
}

/// A run that opens the GPU prints nothing on stderr (Mesa's device-select
/// layer complained of XDG_RUNTIME_DIR on every run), and `--backend cpu`
/// never loads a GPU library (glibc's LD_DEBUG lists every library loaded).
#[test]
fn gpu_runs_are_quiet_and_cpu_runs_load_no_gpu_library() {
    let model = golden_dir("tiny_odd");
    let m = model.to_str().unwrap();
    let run = |backend: &str, env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_decode-lab"));
        command.args(["logits", "--model", m, "--tokens", "1,2", "--backend", backend]);
        command.env_remove("XDG_RUNTIME_DIR").env_remove("NODEVICE_SELECT");
        command.envs(env.iter().copied());
        let out = command.output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    if backends().contains(&"gpu") {
        assert_eq!(run("gpu", &[]), "", "a GPU run's stderr");
    }
    let libraries = run("cpu", &[("LD_DEBUG", "libs")]);
    assert!(libraries.contains("calling init"), "LD_DEBUG lists the libraries: {libraries}");
    for gpu in ["libvulkan", "libEGL", "libGL", "libwayland"] {
        assert!(!libraries.contains(gpu), "--backend cpu loaded {gpu}");
    }
}

/// `bench --batch` times the batched steps; the figure for the same
/// sequences decoded one after another is computed from one sequence's
/// rate, and says so rather than reading as measured.
#[test]
fn bench_batch_labels_its_derived_figure() {
    let out = bench_tiny(&["--tokens", "4", "--backend", "cpu", "--batch", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| l.starts_with("one after another")).expect("the line");
    assert!(line.contains("derived (not timed)") && line.contains("3 sequences in turn"), "{line}");
}

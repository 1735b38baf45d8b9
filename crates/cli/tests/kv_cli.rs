//! The KV cache under a budget from the command line (issue 34): `--kv-policy`
//! on both engines shrinks the cache the bench reads, and `kv-quality`
//! prints each policy's held-out figures against the full cache.

mod common;

use common::{backends, decode_lab, golden_dir};

/// `--kv-policy` keeps a cache under a budget on either engine: the bench
/// reads the rows it holds from the cache.
#[test]
fn kv_policy_shrinks_the_cache_the_bench_reads() {
    let model = golden_dir("tiny_odd");
    let bench = |policy: &str, backend: &str| {
        decode_lab(&[
            "bench",
            "--model",
            model.to_str().unwrap(),
            "--prompt-len",
            "20",
            "--tokens",
            "20",
            "--backend",
            backend,
            "--kv-policy",
            policy,
        ])
    };
    // tiny_odd: 2 layers × 48 dims × K and V × 4 bytes = 768 bytes a token.
    // The steps at positions 20..39 read 21..40 rows under `full` (30.5 on
    // average), and never more than the policy's budget under the others.
    for backend in backends() {
        for (policy, held, read) in
            [("full", 40, 30.5), ("window:16", 16, 16.0), ("sinks:2,window:6", 8, 8.0)]
        {
            let out = bench(policy, backend);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let want = format!("kv cache in use    {} bytes", held * 768);
            assert!(text.contains(&want), "{backend} {policy}: {text}");
            let want = format!(" = {} bytes (the rows each step's query reads", read * 768.0);
            assert!(text.contains(&want), "{backend} {policy}: reads per token: {text}");
        }
    }
    let out = bench("window:0", "cpu");
    assert!(String::from_utf8_lossy(&out.stderr).contains("kv policy"));
}

/// Without an adapter the GPU tests fail rather than run on the CPU alone
/// (run in a child process that sees no adapter).
#[test]
fn the_gpu_tests_fail_without_an_adapter() {
    let (passed, text) = common::run_without_adapter("kv_policy_shrinks_the_cache_the_bench_reads");
    assert!(!passed, "a GPU test passed without an adapter:\n{text}");
    assert!(text.contains("the GPU backend failed, so the GPU tests cannot run"), "{text}");
}

/// `kv-quality` scores policies on a text against the full cache: a budget
/// as long as the text costs nothing (KL 0, the same top token everywhere,
/// the full cache's bits/byte), a small window costs something, and the
/// engines agree.
#[test]
fn kv_quality_prints_each_policys_figures_against_the_full_cache() {
    let model = golden_dir("tiny_odd");
    let text = std::env::temp_dir().join(format!("kv-quality-{}.txt", std::process::id()));
    std::fs::write(&text, "The quick brown fox jumps over the lazy dog. ".repeat(4)).unwrap();
    let mut runs = Vec::new();
    for backend in backends() {
        let out = decode_lab(&[
            "kv-quality",
            "--model",
            model.to_str().unwrap(),
            "--backend",
            backend,
            "--text",
            text.to_str().unwrap(),
            "--kv-policy",
            "window:4",
            "--kv-policy",
            "sinks:1,window:1000",
            "--json",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (small, whole) = (&rows[0], &rows[1]);
        assert_eq!(whole["kl_mean"].as_f64(), Some(0.0), "{backend}: {whole}");
        assert_eq!(whole["same_top1"].as_f64(), Some(1.0), "{backend}");
        assert_eq!(whole["bits_per_byte"], whole["full_bits_per_byte"], "{backend}");
        assert!(small["kl_mean"].as_f64().unwrap() > 0.0, "{backend}: {small}");
        runs.push(small["bits_per_byte"].as_f64().unwrap());
    }
    let spread = runs.iter().fold(0.0f64, |m, &b| m.max((b - runs[0]).abs()));
    assert!(spread <= 1e-4 * runs[0], "bits/byte by engine: {runs:?}");
    // A model folder without a held-out passage says so.
    let out = decode_lab(&[
        "kv-quality",
        "--model",
        model.to_str().unwrap(),
        "--backend",
        "cpu",
        "--kv-policy",
        "window:4",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ships no held-out passage"));
    let _ = std::fs::remove_file(text);
}

/// `--kv-groups G` converts the checkpoint to G K/V head groups: `logits`
/// equals transformers with the pooled weights (the engine test's golden),
/// on both engines; a G that does not divide the heads is a clear error.
#[test]
fn kv_groups_pools_the_heads_as_transformers_does() {
    let model = golden_dir("untied_f16");
    let bytes = std::fs::read(model.join("kv_groups.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let data = |k: &str| st.tensor(k).unwrap().data().to_vec();
    let ids: Vec<i64> =
        data("tokens").chunks(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect();
    // logits_0: 2 groups (tools/golden/make_gqa_golden.py).
    let want: Vec<f32> =
        data("logits_0").chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let tokens = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let m = model.to_str().unwrap();
    for backend in backends() {
        let args = [
            "logits",
            "--model",
            m,
            "--weights",
            "f32",
            "--kv-groups",
            "2",
            "--tokens",
            &tokens,
            "--backend",
            backend,
        ];
        let out = decode_lab(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let got: Vec<f32> = json["logits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32))
            .collect();
        assert_eq!(got.len(), want.len());
        let err = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f32::max)
            / want.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        assert!(err <= 1e-4, "{backend}: rel err {err}");
    }
    let out = decode_lab(&[
        "logits",
        "--model",
        m,
        "--kv-groups",
        "3",
        "--tokens",
        "1",
        "--backend",
        "cpu",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must divide the model's 4 heads"));
}

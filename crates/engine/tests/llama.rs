//! The Llama family (issue 49): random Llama, Llama-3-scaled, Mistral and
//! Qwen2 checkpoints (tools/golden/make_llama_golden.py: grouped K/V heads
//! 1, 2 and 3 of 6 or 9, tied and untied, q/k/v biases, three `rope_theta`
//! values, stored as f32, f16 and bf16) give `transformers`' logits ≤ 1e-4
//! relative on the CPU engine — as loaded, in its fast layout and in a
//! worker — and on the GPU engine in both kernel profiles (lavapipe here),
//! through a prefill and through the cache, and its greedy tokens; the cache
//! keeps one K/V head per group.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::rc::Rc;
use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::model::{Model, WeightsChoice};
use decode_lab_engine::remote::{Host, Link, Loopback, RemoteModel};
use decode_lab_engine::storage::format::Format;
use decode_lab_engine::{Session, Wanted};
use pollster::block_on;
use safetensors::SafeTensors;

const CASES: [&str; 4] = ["llama_gqa", "llama3_mqa", "mistral_f16", "qwen2_bf16"];

/// One case's golden: tokens, prefill and decode logits (tokens, vocab),
/// and the greedy continuation of the first `greedy_prompt` tokens.
struct Golden {
    tokens: Vec<u32>,
    prefill: Vec<f32>,
    decode: Vec<f32>,
    greedy: Vec<u32>,
    greedy_prompt: usize,
}

fn golden(case: &str) -> Golden {
    let path = common::fixtures().join("golden").join(case).join("golden.safetensors");
    let bytes = std::fs::read(path).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let greedy_prompt = meta.metadata().as_ref().unwrap()["greedy_prompt"].parse().unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let ids = |name: &str| -> Vec<u32> {
        let v: Vec<i64> = bytemuck::pod_collect_to_vec(st.tensor(name).unwrap().data());
        v.iter().map(|&i| i as u32).collect()
    };
    let floats = |name: &str| bytemuck::pod_collect_to_vec(st.tensor(name).unwrap().data());
    Golden {
        tokens: ids("tokens"),
        prefill: floats("prefill"),
        decode: floats("decode"),
        greedy: ids("greedy"),
        greedy_prompt,
    }
}

fn dir(case: &str) -> std::path::PathBuf {
    common::fixtures().join("golden").join(case)
}

/// `model` in a CPU worker that loaded the checkpoint's files itself.
fn worker(case: &str, model: &Arc<Model>) -> Session {
    let config = std::fs::read_to_string(dir(case).join("config.json")).unwrap();
    let file = std::fs::read(dir(case).join("model.safetensors")).unwrap();
    let host = Host::load(&config, &file, model.format()).unwrap();
    let remote = RemoteModel::new(Rc::new(Loopback::new(host)) as Rc<dyn Link>, model);
    Session::Remote(remote.session())
}

/// Every engine's sessions on `model`: the CPU engine as loaded, in its fast
/// layout and in a worker; where the machine has an adapter, the GPU engine
/// in both kernel profiles.
fn sessions(case: &str, model: &Arc<Model>) -> Vec<(&'static str, Session)> {
    let mut fast = (**model).clone();
    fast.weights.use_cpu_layout();
    let mut out = vec![
        ("cpu-fast", Session::Cpu(CpuSession::new(Arc::new(fast)))),
        ("worker", worker(case, model)),
    ];
    out.extend(common::sessions_on_both(model));
    out
}

#[test]
fn every_family_matches_transformers_on_every_engine() {
    for case in CASES {
        let g = golden(case);
        let model = Arc::new(Model::from_dir(&dir(case)).unwrap());
        let (c, n) = (&model.config, g.tokens.len());
        for (engine, mut s) in sessions(case, &model) {
            let what = format!("{case} on {engine}");
            let got = block_on(s.prefill(&g.tokens, Wanted::All)).unwrap();
            let err = common::rel_max_err(&got, &g.prefill);
            assert!(err <= 1e-4, "{what}: prefill rel err {err}");
            let bytes = (2 * c.n_layer * c.kv_dim() * n * 4) as u64;
            assert_eq!(block_on(s.kv_bytes()).unwrap().in_use, bytes, "{what}: cache bytes");
            // Token by token through the cache, from an empty one.
            s.rewind(0).unwrap();
            for (i, &t) in g.tokens.iter().enumerate() {
                let row = match i {
                    0 => block_on(s.prefill(&[t], Wanted::Last)).unwrap(),
                    _ => block_on(s.decode(t)).unwrap(),
                };
                let want = &g.decode[i * c.vocab_size..][..c.vocab_size];
                let err = common::rel_max_err(&row, want);
                assert!(err <= 1e-4, "{what}: decode step {i}: rel err {err}");
            }
            s.rewind(0).unwrap();
            let prompt = &g.tokens[..g.greedy_prompt];
            assert_eq!(
                common::greedy_ids(&mut s, prompt, g.greedy.len()),
                g.greedy,
                "{what}: greedy"
            );
        }
    }
}

/// An f16 checkpoint held as f16 (the page's and the CLI's `weights=auto`)
/// gives the f32 model's logits: the same values in half the bytes.
#[test]
fn an_f16_checkpoint_is_held_as_f16_with_the_same_logits() {
    let case = "mistral_f16";
    let g = golden(case);
    let model = Model::from_dir_as(&dir(case), WeightsChoice::Auto).unwrap();
    assert_eq!(model.format(), Format::F16);
    let mut s = Session::Cpu(CpuSession::new(Arc::new(model)));
    let got = block_on(s.prefill(&g.tokens, Wanted::All)).unwrap();
    let err = common::rel_max_err(&got, &g.prefill);
    assert!(err <= 1e-4, "f16 held: rel err {err}");
}

/// Every format the engine packs runs these models: the logits stay near
/// the f32 ones, by as much as the format's rounding allows.
#[test]
fn every_format_runs_the_family_near_its_f32_logits() {
    for case in CASES {
        let g = golden(case);
        let f32_model = Model::from_dir(&dir(case)).unwrap();
        for (format, tol) in [
            (Format::F16, 0.01),
            (Format::Bf16, 0.05),
            (Format::Int8, 0.05),
            (Format::Int8PerTensor, 0.1),
            (Format::Int4, 0.5),
        ] {
            let model = Arc::new(f32_model.to_format(format).unwrap());
            let mut s = Session::Cpu(CpuSession::new(model));
            let got = block_on(s.prefill(&g.tokens, Wanted::All)).unwrap();
            let err = common::rel_max_err(&got, &g.prefill);
            assert!(err <= tol, "{case} in {}: rel err {err} > {tol}", format.name());
        }
    }
}

/// The GPU engine runs the family in every format and profile as the CPU
/// engine does on the same packed weights (the fused decode kernels
/// included): the self-test's whole-model check, 16 greedy steps through the
/// cache, on every case (narrow K/V heads 1, 2 and 3 of 6 or 9).
#[test]
fn the_gpu_equals_the_cpu_on_the_family_in_every_format() {
    use decode_lab_engine::gpu::{selftest, GpuModel};
    let Some((ctx, _)) = common::gpu() else { return };
    for case in CASES {
        let model = Arc::new(Model::from_dir(&dir(case)).unwrap());
        let prompt = &golden(case).tokens[..4];
        for format in Format::ALL {
            for (name, profile) in common::PROFILES {
                let open = GpuModel::with_format(ctx.clone(), model.clone(), format, profile);
                let gpu_model = block_on(open).unwrap();
                assert_eq!(gpu_model.weight_bytes(), gpu_model.model.weights.bytes());
                let check = block_on(selftest::check_model(gpu_model, prompt, 16));
                let what = format!("{case} in {} on {name}", format.name());
                assert!(check.passed(), "{what}: {check:?}");
            }
        }
    }
}

/// A Llama config as the Hub's checkpoints write it (`rope_theta` and
/// `rope_scaling` at the top level), with `extra` fields merged in.
fn hub_config(extra: serde_json::Value) -> String {
    let mut c = serde_json::json!({
        "model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 100, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "eos_token_id": [7, 9], "tie_word_embeddings": true,
    });
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c.to_string()
}

#[test]
fn hub_style_configs_parse_with_their_rotary_settings() {
    use decode_lab_engine::model::Config;
    let c = Config::from_json(&hub_config(serde_json::json!({}))).unwrap();
    let llama = c.llama().expect("a Llama-family config");
    assert_eq!((c.n_kv_head, c.head_size, c.kv_dim(), c.eos_token_id), (2, 16, 32, Some(7)));
    assert_eq!((llama.rope.theta, llama.rope.llama3.is_none()), (500000.0, true));
    // θ^(-2i/d): the first pair turns once a position, the last slowest.
    let inv = llama.rope.inv_freq(c.head_size);
    assert_eq!((inv.len(), inv[0]), (8, 1.0));
    assert!((inv[7] - 500000f32.powf(-14.0 / 16.0)).abs() < 1e-9);
    let scaled = serde_json::json!({"rope_scaling": {"type": "llama3", "factor": 32.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}});
    let c3 = Config::from_json(&hub_config(scaled)).unwrap();
    let inv3 = c3.llama().unwrap().rope.inv_freq(c3.head_size);
    assert_eq!(inv3[0], inv[0], "short wavelengths are kept");
    assert!((inv3[7] - inv[7] / 32.0).abs() < 1e-12, "long ones divided by the factor");
    // Qwen2 has biases on q, k and v only; a Llama checkpoint none.
    let q = Config::from_json(&hub_config(serde_json::json!({"model_type": "qwen2"}))).unwrap();
    let b = q.llama().unwrap().biases;
    assert_eq!((b.qkv, b.o, b.mlp), (true, false, false));
    assert!(!llama.biases.qkv);
}

#[test]
fn what_the_engine_lacks_is_refused_by_name() {
    use decode_lab_engine::model::Config;
    let cases = [
        (
            serde_json::json!({"model_type": "mistral", "sliding_window": 4096,
                "layer_types": ["sliding_attention", "full_attention"]}),
            "sliding attention window of 4096 tokens",
        ),
        (
            serde_json::json!({"model_type": "qwen2", "use_sliding_window": true}),
            "sliding attention window",
        ),
        (serde_json::json!({"num_local_experts": 8}), "mixture of experts"),
        (
            serde_json::json!({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}),
            "rotary scaling \"yarn\"",
        ),
        (
            serde_json::json!({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}),
            "needs a positive `low_freq_factor`",
        ),
        (serde_json::json!({"hidden_act": "gelu"}), "`hidden_act` is \"gelu\""),
        (serde_json::json!({"head_dim": 32}), "`head_dim` is 32"),
        (serde_json::json!({"num_key_value_heads": 3}), "sharing 3 K/V heads"),
        (serde_json::json!({"num_hidden_layers": 0}), "`num_hidden_layers` is 0"),
        (serde_json::json!({"partial_rotary_factor": 0.5}), "`partial_rotary_factor`"),
        (serde_json::json!({"model_type": "phi3"}), "`model_type` is \"phi3\""),
    ];
    for (extra, want) in cases {
        let e = Config::from_json(&hub_config(extra.clone())).unwrap_err().to_string();
        assert!(e.contains(want), "{extra}: {e}");
    }
}

/// Mistral's sliding window, on every layer, caps the context at it (exact:
/// no token is ever further back than the window); a window longer than the
/// context changes nothing.
#[test]
fn a_uniform_sliding_window_caps_the_context() {
    use decode_lab_engine::model::Config;
    let n_positions = |extra| Config::from_json(&hub_config(extra)).unwrap().n_positions;
    let long = n_positions(serde_json::json!({"model_type": "mistral"}));
    assert_eq!(n_positions(serde_json::json!({"model_type": "mistral", "sliding_window": 16})), 16);
    let wide = serde_json::json!({"model_type": "mistral", "sliding_window": long + 100});
    assert_eq!(n_positions(wide), long);
    let null = serde_json::json!({"model_type": "mistral", "sliding_window": null});
    assert_eq!(n_positions(null), long);
}

/// `Config::n_params` counts the checkpoint's tensors, biases and untied heads included;
/// `Config::block_matrix_weights` a block's matrices, `Config::weight_bytes` the
/// weights' bytes in every format.
#[test]
fn the_parameter_count_is_the_checkpoints() {
    for case in CASES {
        let bytes = std::fs::read(dir(case).join("model.safetensors")).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let stored: usize =
            st.tensors().iter().map(|(_, t)| t.shape().iter().product::<usize>()).sum();
        let model = Model::from_dir(&dir(case)).unwrap();
        assert_eq!(model.config.n_params(), stored, "{case}");
        // (the page's memory estimate counts a Llama block's f32 matrices)
        let block = &model.weights.layers[0];
        let matrices: usize = block.matrices().iter().map(|m| m.rows * m.cols).sum();
        assert_eq!(model.config.block_matrix_weights(), matrices, "{case}");
        for f in Format::ALL {
            let held = model.to_format(f).unwrap().weights.bytes();
            assert_eq!(model.config.weight_bytes(f), held, "{case} {f:?}");
        }
    }
}

/// A decode step of the family on the GPU: as many dispatches a block as
/// GPT-2's fused blocks (5 in both profiles): rms_qkv (or its split shape)
/// and rms_swiglu in place of ln_qkv and ln_fc_gelu, and none of the
/// family's unfused kernels.
#[test]
fn a_gpu_decode_step_runs_the_family_kernels_block_by_block() {
    use decode_lab_engine::gpu::plan::Layout;
    use decode_lab_engine::gpu::plan_decode;
    use decode_lab_engine::kernels::{Kernel, Profile, Split};
    use decode_lab_engine::model::Config;
    let c = Config::from_json(&hub_config(serde_json::json!({}))).unwrap();
    let gpu = Profile::Gpu(Split::DEFAULT);
    let fused = [
        (Profile::Cpu, [Kernel::RmsQkv, Kernel::RmsSwiglu]),
        (gpu, [Kernel::RmsQkvSplit, Kernel::RmsSwigluSplit]),
    ];
    for (profile, family) in fused {
        let layout = Layout::of(&c, Format::F32, profile, 128 << 20);
        let kernels: Vec<Kernel> = plan_decode::decode(&layout, Default::default())
            .specs
            .iter()
            .map(|s| s.dispatch.kernel())
            .collect();
        // The embedding, the blocks, the final norm and the LM head.
        assert_eq!(kernels.len(), 1 + 5 * c.n_layer + 2, "{}", profile.name());
        for k in family {
            let blocks = kernels.iter().filter(|&&d| d == k).count();
            assert_eq!(blocks, c.n_layer, "{}: {}", profile.name(), k.name());
        }
        let unfused = [Kernel::Rope, Kernel::Swiglu, Kernel::KvWrite, Kernel::Matmul];
        for k in unfused.into_iter().chain([Kernel::Layernorm, Kernel::Gelu, Kernel::LnQkv]) {
            assert!(!kernels.contains(&k), "{}: {}", profile.name(), k.name());
        }
    }
}

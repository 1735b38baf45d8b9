//! The device limits a model's shape meets, checked without uploading it.

use super::*;

fn config(n_embd: usize, n_head: usize) -> Config {
    let json = format!(
        r#"{{"n_layer": 1, "n_head": {n_head}, "n_embd": {n_embd}, "n_positions": 8, "vocab_size": 8}}"#
    );
    Config::from_json(&json).unwrap()
}

#[test]
fn shapes_beyond_workgroup_memory_are_clear_errors() {
    assert!(check_shapes(&config(1600, 25)).is_ok()); // GPT-2 XL
    assert!(check_shapes(&config(2048, 32)).is_ok());
    let wide = check_shapes(&config(2112, 33)).unwrap_err().to_string();
    assert!(wide.contains("n_embd") && wide.contains("2112") && wide.contains("2048"), "{wide}");
    let head = check_shapes(&config(512, 1)).unwrap_err().to_string();
    assert!(head.contains("head_size") && head.contains("512"), "{head}");
}

/// A Qwen2.5 shape (32,768 positions) as `config.json` gives it.
#[cfg(not(target_arch = "wasm32"))]
fn qwen(hidden: usize, inner: usize, heads: usize, layers: usize) -> Config {
    let json = format!(
        r#"{{"model_type": "qwen2", "hidden_size": {hidden}, "intermediate_size": {inner},
        "num_attention_heads": {heads}, "num_key_value_heads": 2, "num_hidden_layers": {layers},
        "max_position_embeddings": 32768, "vocab_size": 151936, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu"}}"#
    );
    Config::from_json(&json).unwrap()
}

/// Within WebGPU's default limits (128 MiB a binding) Qwen2.5-0.5B and
/// -1.5B open on the GPU: their activations are a pass's rows, where a
/// whole context's would not fit (0.5B: 1.27 GB of MLP activations),
/// and a rotary model's placeholder position embedding is not checked.
#[test]
#[cfg(not(target_arch = "wasm32"))] // opens a native adapter
fn long_context_models_fit_the_default_limits_in_passes() {
    let Ok(ctx) = pollster::block_on(GpuContext::within(Some(wgpu::Limits::default()))) else {
        return; // no adapter here: the GPU tests are skipped
    };
    let binding = wgpu::Limits::default().max_storage_buffer_binding_size;
    for c in [qwen(896, 4864, 14, 24), qwen(1536, 8960, 12, 28)] {
        let whole_context = (c.n_positions * 2 * c.n_inner * 4) as u64;
        assert!(whole_context > binding, "{whole_context}");
        assert_eq!(pass_rows(&c), PASS_ROWS);
        for format in [Format::F32, Format::F16, Format::Int4] {
            let checked = check_limits(&ctx, &c, format);
            assert!(checked.is_ok(), "{} {}: {checked:?}", c.n_embd, format.name());
        }
    }
}

#![cfg(not(target_arch = "wasm32"))] // used by the native tests only
//! Shared by the engine's integration tests: one GPU context per test binary,
//! fixtures, and the tolerance check.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use decode_lab_engine::gpu::{GpuContext, GpuModel, Pipelines};
use decode_lab_engine::kernels::{Profile, Split};
use decode_lab_engine::model::Model;
use decode_lab_engine::storage::format::Format;

/// The device every GPU test in this binary shares. A machine without an
/// adapter fails every GPU test: a test that returns early would pass having
/// checked nothing. A developer without Vulkan may skip them, loudly, with
/// `DECODE_LAB_GPU_TESTS=skip` (`./tools/dev test` never does).
pub fn gpu() -> Option<&'static (GpuContext, Pipelines)> {
    static GPU: OnceLock<Result<(GpuContext, Pipelines), String>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| {
        pollster::block_on(async {
            let ctx = GpuContext::new().await.map_err(|e| e.to_string())?;
            let pipelines =
                Pipelines::of(&ctx, Format::F32, Profile::Cpu, &Profile::Cpu.kernels()).await;
            let pipelines = pipelines.map_err(|e| e.to_string())?;
            Ok::<_, String>((ctx, pipelines))
        })
    });
    match gpu {
        Ok(gpu) => Some(gpu),
        Err(e) if skipping_gpu_tests() => {
            eprintln!("\n*** GPU TESTS SKIPPED (DECODE_LAB_GPU_TESTS=skip): {e} ***\n");
            None
        }
        Err(e) => panic!(
            "no GPU adapter, so the GPU tests cannot run: {e}. Install mesa-vulkan-drivers \
             (lavapipe), or set DECODE_LAB_GPU_TESTS=skip to skip them on this machine"
        ),
    }
}

/// Whether this run may skip the GPU tests on a machine without an adapter.
pub fn skipping_gpu_tests() -> bool {
    std::env::var("DECODE_LAB_GPU_TESTS").as_deref() == Ok("skip")
}

/// Runs `test` (a test of this binary, by its exact name) in a child process
/// that can see no adapter: Vulkan without a driver and no other backend.
/// Returns whether it passed and what it printed.
pub fn run_without_adapter(test: &str) -> (bool, String) {
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
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

/// f32 slice → bytes for upload.
pub fn bytes(v: &[f32]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// `|got - want| <= atol + rtol * |want|` for every element; NaN never passes.
/// With no tolerance at all the bits must be equal (integers read as f32).
pub fn assert_close(what: &str, got: &[f32], want: &[f32], atol: f32, rtol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if (atol, rtol) == (0.0, 0.0) {
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{what}: element {i}: bits {g:e} vs {w:e}");
        }
        return;
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= atol + rtol * w.abs(); // false for any NaN
        assert!(ok, "{what}: element {i}: got {g}, want {w} (atol {atol}, rtol {rtol})");
    }
}

/// max |got - want| / max |want|: the whole-model metric of the issue tracker.
pub fn rel_max_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    if got.iter().any(|v| !v.is_finite()) {
        return f32::INFINITY;
    }
    let err = got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f32::max);
    err / want.iter().map(|w| w.abs()).fold(0.0, f32::max)
}

/// `tests/fixtures/` at the repository root.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A golden fixture model by name.
pub fn golden_model(name: &str) -> Arc<Model> {
    let dir = fixtures().join("golden").join(name);
    Arc::new(Model::from_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
}

/// The kernel profiles the GPU tests run, each by name: the cpu profile's
/// kernels (`gpu`) and the real GPUs' (`gpu-split`, in the default layout;
/// the kernel cases run every layout).
pub const PROFILES: [(&str, Profile); 2] =
    [("gpu", Profile::Cpu), ("gpu-split", Profile::Gpu(Split::DEFAULT))];

/// `model` on this machine's GPU with the kernels of `profile`, where it has an adapter.
pub fn gpu_model(model: &Arc<Model>, profile: Profile) -> Option<std::rc::Rc<GpuModel>> {
    let (ctx, _) = gpu()?;
    Some(pollster::block_on(GpuModel::new(ctx.clone(), model.clone(), profile)).expect("uploads"))
}

/// Steps a test takes on engine `name`: a third for the gpu profile, whose
/// kernels are shaped for real GPUs (256 invocations, trees of barriers,
/// tiles in workgroup memory) and crawl on lavapipe, a CPU.
pub fn steps_on(name: &str, steps: usize) -> usize {
    match name {
        "gpu-split" => steps.div_ceil(3),
        _ => steps,
    }
}

/// A CPU session on `model`, and where the machine has an adapter a GPU one
/// in each kernel profile ([`PROFILES`]), each with its engine's name.
pub fn sessions_on_both(model: &Arc<Model>) -> Vec<(&'static str, decode_lab_engine::Session)> {
    use decode_lab_engine::cpu::CpuSession;
    use decode_lab_engine::gpu::GpuSession;
    use decode_lab_engine::Session;
    let mut out = vec![("cpu", Session::Cpu(CpuSession::new(model.clone())))];
    for (name, profile) in PROFILES {
        if let Some(gpu) = gpu_model(model, profile) {
            out.push((name, Session::Gpu(GpuSession::new(gpu).unwrap())));
        }
    }
    out
}

/// A GPT-2's tensors as (name, shape), Hub-style names, tied LM head.
pub fn gpt2_shapes(
    n_layer: usize,
    n_embd: usize,
    vocab: usize,
    n_positions: usize,
) -> Vec<(String, Vec<usize>)> {
    let e = n_embd;
    let mut v = vec![
        ("wte.weight".to_string(), vec![vocab, e]),
        ("wpe.weight".into(), vec![n_positions, e]),
    ];
    for l in 0..n_layer {
        for (n, s) in [
            ("ln_1.weight", vec![e]),
            ("ln_1.bias", vec![e]),
            ("attn.c_attn.weight", vec![e, 3 * e]),
            ("attn.c_attn.bias", vec![3 * e]),
            ("attn.c_proj.weight", vec![e, e]),
            ("attn.c_proj.bias", vec![e]),
            ("ln_2.weight", vec![e]),
            ("ln_2.bias", vec![e]),
            ("mlp.c_fc.weight", vec![e, 4 * e]),
            ("mlp.c_fc.bias", vec![4 * e]),
            ("mlp.c_proj.weight", vec![4 * e, e]),
            ("mlp.c_proj.bias", vec![e]),
        ] {
            v.push((format!("h.{l}.{n}"), s));
        }
    }
    v.push(("ln_f.weight".to_string(), vec![e]));
    v.push(("ln_f.bias".to_string(), vec![e]));
    v
}

/// A safetensors file of `shapes` with seeded random f32 values, the
/// matrices scaled by `matrix_scale` (vectors by 1).
pub fn random_safetensors(shapes: &[(String, Vec<usize>)], matrix_scale: f32) -> Vec<u8> {
    use decode_lab_engine::gpu::selftest::cases;
    use safetensors::{tensor::TensorView, Dtype};
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .enumerate()
        .map(|(i, (_, shape))| {
            let scale = if shape.len() == 1 { 1.0 } else { matrix_scale };
            let v: Vec<f32> =
                cases::random(shape.iter().product(), i as u64).iter().map(|x| x * scale).collect();
            bytemuck::cast_slice(&v).to_vec()
        })
        .collect();
    let views = shapes.iter().zip(&data).map(|((name, shape), bytes)| {
        (name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes).unwrap())
    });
    safetensors::serialize(views, None).unwrap()
}

/// Token ids as a JSON fixture lists them.
pub fn json_ids(list: &serde_json::Value) -> Vec<u32> {
    let list = list.as_array().expect("a list of ids");
    list.iter().map(|v| v.as_u64().expect("an id") as u32).collect()
}

/// `n` greedy tokens after `prompt` through `s`'s cache: one prefill, then
/// one decode step per token (the lowest id on ties).
pub fn greedy_ids(s: &mut decode_lab_engine::Session, prompt: &[u32], n: usize) -> Vec<u32> {
    use decode_lab_engine::{sample::argmax, Wanted};
    let mut logits = pollster::block_on(s.prefill(prompt, Wanted::Last)).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let t = argmax(&logits);
        out.push(t);
        logits = pollster::block_on(s.decode(t)).unwrap();
    }
    out
}

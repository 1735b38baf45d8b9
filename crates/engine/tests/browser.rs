//! The engine inside real headless Chromium: the wasm build, on the browser's
//! WebGPU adapter (SwiftShader here) and on the CPU fallback, against the same
//! `transformers` golden logits the native tests use. Run by `./tools/dev test`
//! through wasm-bindgen-test-runner and chromedriver (see webdriver.json).
#![cfg(target_arch = "wasm32")]

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::{GpuContext, GpuModel, GpuSession};
use decode_lab_engine::kernels::{Profile, Split};
use decode_lab_engine::model::Model;
use decode_lab_engine::{Session, Wanted};
use wasm_bindgen_test::*;

#[path = "shared/attention_cases.rs"]
mod attention_cases;
#[path = "shared/f16_paths.rs"]
mod f16_paths;
#[path = "shared/portable.rs"]
mod portable;
#[path = "shared/portable_forward.rs"]
mod portable_forward;

wasm_bindgen_test_configure!(run_in_browser);

const CONFIG: &str = include_str!("../../../tests/fixtures/golden/tiny_odd/config.json");
const WEIGHTS: &[u8] = include_bytes!("../../../tests/fixtures/golden/tiny_odd/model.safetensors");
const GOLDEN: &[u8] = include_bytes!("../../../tests/fixtures/golden/tiny_odd/golden.safetensors");

fn golden(key: &str) -> Vec<f32> {
    let st = safetensors::SafeTensors::deserialize(GOLDEN).unwrap();
    bytemuck::pod_collect_to_vec(st.tensor(key).unwrap().data())
}

fn tokens() -> Vec<u32> {
    let st = safetensors::SafeTensors::deserialize(GOLDEN).unwrap();
    let ids: Vec<i64> = bytemuck::pod_collect_to_vec(st.tensor("tokens_17").unwrap().data());
    ids.into_iter().map(|i| i as u32).collect()
}

fn rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let err = got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0f32, |a, b| {
        if b.is_nan() {
            f32::INFINITY
        } else {
            a.max(b)
        }
    });
    err / want.iter().map(|w| w.abs()).fold(0.0, f32::max)
}

async fn check(mut session: Session) {
    let name = session.backend_name();
    let got = session.prefill(&tokens(), Wanted::All).await.unwrap();
    let err = rel_err(&got, &golden("prefill_17"));
    assert!(err <= 1e-4, "{name} prefill: {err:e}");
    session.rewind(0).unwrap();
    let mut got = Vec::new();
    for t in tokens() {
        got.extend(session.decode(t).await.unwrap());
    }
    let err = rel_err(&got, &golden("decode_17"));
    assert!(err <= 1e-4, "{name} decode: {err:e}");
}

/// In both kernel profiles: the real GPUs' kernels are checked on SwiftShader too.
#[wasm_bindgen_test]
async fn gpu_engine_matches_transformers_on_webgpu() {
    let model = Arc::new(Model::from_bytes(CONFIG, WEIGHTS).unwrap());
    let ctx = GpuContext::new()
        .await
        .expect("Chromium runs with --enable-unsafe-webgpu: an adapter must exist");
    for profile in [Profile::Cpu, Profile::Gpu(Split::DEFAULT)] {
        let gpu = GpuModel::new(ctx.clone(), model.clone(), profile).await.unwrap();
        let session = Session::Gpu(GpuSession::new(gpu).unwrap());
        let s = session.last_stats();
        assert_eq!(s.submits, 0);
        check(session).await;
    }
}

/// The gpu profile's kernels against their CPU twins on the browser's
/// adapter, compiled by the browser's own WGSL compiler, in every weight
/// format (the case table, default layout: lavapipe runs every layout), on a
/// device with no more than the WebGPU spec's default limits (8 storage
/// buffers per stage, 16 KiB of workgroup memory, 256 invocations), which
/// Chromium enforces on every pipeline and binding: what a modest laptop's
/// browser offers. The cpu profile's run in the page's self-test, under the
/// same limits too (tests/e2e/selftest.test.mjs, limits.test.mjs).
#[wasm_bindgen_test]
async fn gpu_profile_kernels_match_their_twins_on_webgpu() {
    use decode_lab_engine::gpu::selftest::check_kernels;
    let ctx = GpuContext::within(Some(wgpu::Limits::default())).await.expect("an adapter");
    assert_eq!(ctx.limits.max_storage_buffers_per_shader_stage, 8, "the spec's default");
    let started = web_time::Instant::now();
    let results = check_kernels(&ctx, Profile::Gpu(Split::DEFAULT), None).await;
    for r in &results {
        assert!(r.passed(), "{} {}: {:?}", r.kernel.name(), r.shape, r.detail);
    }
    let ms: f64 = results.iter().map(|r| r.ms).sum();
    let total = started.elapsed().as_secs_f64();
    console_log!("{} cases: {ms:.0} ms running, {total:.1} s in all", results.len());
}

#[wasm_bindgen_test]
async fn cpu_engine_matches_transformers_in_wasm() {
    let model = Arc::new(Model::from_bytes(CONFIG, WEIGHTS).unwrap());
    check(Session::Cpu(CpuSession::new(model))).await;
}

/// The sampler's stream is the same in wasm as natively (tests/sample.rs holds the same list).
#[wasm_bindgen_test]
fn seeded_draws_match_native() {
    use decode_lab_engine::sample::{Sampler, Settings};
    let mut s = Sampler::new(Settings::default(), 42).unwrap();
    let draws: Vec<u32> =
        (0..20).map(|_| s.next(&[3.0, 2.0, 1.0, 0.5, 0.1], &[]).unwrap().token).collect();
    assert_eq!(draws, portable::EXPECTED_DRAWS_SEED_42);
}

#[wasm_bindgen_test]
fn explanations_are_bit_identical_to_native() {
    assert_eq!(portable::explanation_fingerprint(), portable::EXPLANATION_FINGERPRINT);
}

/// The CPU engine's logits in wasm (one thread, SIMD128) have the bits they
/// have natively (threads, AVX2): `cpu_paths.rs` checks the same fingerprint.
#[wasm_bindgen_test]
fn cpu_logits_are_bit_identical_to_native() {
    assert_eq!(portable_forward::forward_fingerprint(), portable_forward::FORWARD_FINGERPRINT);
}

/// As are those of int8 and int4 multiplying 8-bit activations (the
/// quantization lesson's rows in the page's worker).
#[wasm_bindgen_test]
fn int8_activation_logits_are_bit_identical_to_native() {
    assert_eq!(portable_forward::acts8_fingerprint(), portable_forward::ACTS8_FINGERPRINT);
    assert_eq!(
        portable_forward::acts8_kernel_fingerprint(),
        portable_forward::ACTS8_KERNEL_FINGERPRINT
    );
}

/// The f16 fast paths in wasm (explicit SIMD128 in the head and the panels), and f32's
/// panels, give the bits of the path for any format, as natively.
#[wasm_bindgen_test]
fn f16_paths_equal_the_f32_path_bit_for_bit() {
    f16_paths::matmul_f16_equals_f32();
    f16_paths::lm_head_f16_equals_f32();
    f16_paths::lift_refuses_64();
    f16_paths::matmul_in_panels_equals_f32();
    f16_paths::panels_hold_the_matrix();
    f16_paths::f32_panels_give_the_twins_bits();
    f16_paths::fast_equals_the_plain_twins();
}

/// A decode step's attention in wasm (SIMD128's 4×4 transposes) gives the
/// twin's bits, as natively.
#[wasm_bindgen_test]
fn a_decode_steps_attention_gives_the_twins_bits() {
    attention_cases::step_gives_the_twins_bits("SIMD128");
}

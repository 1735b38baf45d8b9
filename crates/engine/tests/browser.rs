//! The engine inside real headless Chromium: the wasm build, on the browser's
//! WebGPU adapter (SwiftShader here) and on the CPU fallback, against the same
//! `transformers` golden logits the native tests use. Run by `./tools/dev test`
//! through wasm-bindgen-test-runner and chromedriver (see webdriver.json).
#![cfg(target_arch = "wasm32")]

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::{GpuContext, GpuModel, GpuSession};
use decode_lab_engine::model::Model;
use decode_lab_engine::{Session, Wanted};
use wasm_bindgen_test::*;

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

#[wasm_bindgen_test]
async fn gpu_engine_matches_transformers_on_webgpu() {
    let model = Arc::new(Model::from_bytes(CONFIG, WEIGHTS).unwrap());
    let ctx = GpuContext::new()
        .await
        .expect("Chromium runs with --enable-unsafe-webgpu: an adapter must exist");
    let gpu = GpuModel::new(ctx, model).await.unwrap();
    let session = Session::Gpu(GpuSession::new(gpu).unwrap());
    let s = session.last_stats();
    assert_eq!(s.submits, 0);
    check(session).await;
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
    assert_eq!(draws, EXPECTED_DRAWS_SEED_42);
}

#[wasm_bindgen_test]
fn explanations_are_bit_identical_to_native() {
    assert_eq!(explanation_fingerprint(), EXPLANATION_FINGERPRINT);
}

const EXPLANATION_FINGERPRINT: u64 = 14_902_435_712_795_492_728;

/// A fingerprint of every bit of a 50,257-token explanation (all stages, all
/// entropies): the probabilities themselves, not just the draws, must be
/// identical natively and in wasm (tests/browser.rs holds the same value).
fn explanation_fingerprint() -> u64 {
    use decode_lab_engine::sample::Settings;
    let logits: Vec<f32> =
        (0..50_257u32).map(|i| ((i * 7919 % 1000) as f32 / 100.0) - 5.0).collect();
    let history: Vec<u32> = (0..64).map(|i| i * 389).collect();
    let settings = Settings {
        temperature: 0.7,
        top_p: 0.9,
        min_p: 0.01,
        repetition_penalty: 1.2,
        ..Settings::default()
    };
    let e = decode_lab_engine::sample::explain(&logits, &history, &settings).unwrap();
    let mut bits = e.raw_probs.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
    bits.push(e.raw_entropy_bits.to_bits());
    for s in &e.stages {
        bits.extend(s.probs.iter().map(|p| p.to_bits()));
        bits.extend([s.entropy_bits.to_bits(), s.kept_mass.to_bits(), s.kept_count as u64]);
    }
    // FNV-1a over the 64-bit words.
    bits.iter().fold(0xcbf2_9ce4_8422_2325, |h, &w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
}

/// 20 draws from logits [3, 2, 1, 0.5, 0.1] at T = 1 with seed 42.
const EXPECTED_DRAWS_SEED_42: [u32; 20] =
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 1, 1, 0, 0, 1, 0, 0];

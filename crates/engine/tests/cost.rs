//! The comparison paths of the cost lessons, on both engines and the bundled
//! model: decoding without the KV cache (every step re-runs the whole
//! sequence) gives the cached decode's logits and tokens, and a prompt fed
//! through the decode path one token at a time gives the one-pass prefill's
//! logits — so the time ratios the lessons show compare equal work.
#![cfg(not(target_arch = "wasm32"))] // native test

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{rel_max_err, sessions_on_both, steps_on};
use decode_lab_engine::model::Model;
use decode_lab_engine::sample::argmax;
use decode_lab_engine::{KvBytes, Wanted};

/// Relative error allowed between two summation orders of the same pass.
const LIMIT: f32 = 1e-4;

fn model() -> Arc<Model> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    Arc::new(Model::from_dir(&dir).expect("the bundled model loads"))
}

const PROMPT: [u32; 6] = [40, 12, 700, 3, 95, 1800];

#[test]
fn decoding_without_the_cache_gives_the_cached_logits_for_64_steps() {
    let model = model();
    for ((name, mut cached), (_, mut uncached)) in
        sessions_on_both(&model).into_iter().zip(sessions_on_both(&model))
    {
        pollster::block_on(async {
            let mut history = PROMPT.to_vec();
            let mut logits = cached.prefill(&history, Wanted::Last).await.unwrap();
            for step in 0..steps_on(name, 64) {
                let next = argmax(&logits);
                history.push(next);
                logits = cached.decode(next).await.unwrap();
                let again = uncached.decode_without_cache(&history).await.unwrap();
                let err = rel_max_err(&again, &logits);
                assert!(err <= LIMIT, "{name} step {step}: relative error {err:e}");
                assert_eq!(argmax(&again), argmax(&logits), "{name} step {step}");
                // The uncached pass ran the whole sequence, the cached one token.
                assert_eq!(uncached.last_stats().tokens, history.len());
                assert_eq!(cached.last_stats().tokens, 1);
            }
        });
    }
}

#[test]
fn a_prompt_through_the_decode_path_gives_the_prefill_logits() {
    let model = model();
    for ((name, mut one_pass), (_, mut by_decode)) in
        sessions_on_both(&model).into_iter().zip(sessions_on_both(&model))
    {
        pollster::block_on(async {
            let want = one_pass.prefill(&PROMPT, Wanted::Last).await.unwrap();
            let prefill = one_pass.last_stats();
            let (got, stats) = by_decode.prefill_by_decode(&PROMPT).await.unwrap();
            let err = rel_max_err(&got, &want);
            assert!(err <= LIMIT, "{name}: relative error {err:e}");
            assert_eq!(by_decode.pos(), PROMPT.len());
            assert_eq!(stats.tokens, PROMPT.len());
            // One submit per token instead of one for the prompt.
            assert_eq!(stats.submits, PROMPT.len() * prefill.submits);
            // And the next step continues from the same cache.
            let a = one_pass.decode(7).await.unwrap();
            let b = by_decode.decode(7).await.unwrap();
            assert!(rel_max_err(&b, &a) <= LIMIT, "{name}: the step after");
            assert!(by_decode.prefill_by_decode(&[]).await.is_err());
        });
    }
}

#[test]
fn kv_bytes_read_from_the_cache_follow_the_formula_and_the_whole_context_is_allocated() {
    let model = model();
    let c = model.config.clone();
    for (name, mut session) in sessions_on_both(&model) {
        pollster::block_on(async {
            // 2 (K and V) · n_layer · n_embd · 4 bytes (f32) per position.
            let per_position = (2 * c.n_layer * c.n_embd * 4) as u64;
            let whole = per_position * c.n_positions as u64;
            let at = |pos: usize| KvBytes { in_use: per_position * pos as u64, allocated: whole };
            assert_eq!(session.kv_bytes().await.unwrap(), at(0), "{name}: opened");
            session.prefill(&PROMPT, Wanted::Last).await.unwrap();
            session.decode(3).await.unwrap();
            let n = PROMPT.len() + 1;
            assert_eq!(session.kv_bytes().await.unwrap(), at(n), "{name}: after a step");
            assert_eq!(session.kv_bytes_by_formula() as u64, at(n).in_use, "{name}");
            session.rewind(2).unwrap();
            assert_eq!(session.kv_bytes().await.unwrap(), at(2), "{name}: rewound");
            let mut copy = session.fork().unwrap();
            assert_eq!(copy.kv_bytes().await.unwrap(), at(2), "{name}: a fork");
            copy.decode(5).await.unwrap();
            assert_eq!(copy.kv_bytes().await.unwrap(), at(3), "{name}: a fork's step");
            session.copy_from(&copy).unwrap();
            assert_eq!(session.kv_bytes().await.unwrap(), at(3), "{name}: a copy");
        });
    }
}

/// A one-layer GPT-2 of seeded random f32 weights, 2 heads of `e / 2`.
fn one_layer_model(e: usize, vocab: usize, n_pos: usize) -> Arc<Model> {
    use decode_lab_engine::model::WeightsChoice;
    let shapes = common::gpt2_shapes(1, e, vocab, n_pos);
    let file = common::random_safetensors(&shapes, 1.0);
    let config = format!(
        r#"{{"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": {e}, "n_positions": {n_pos}, "vocab_size": {vocab}}}"#
    );
    Arc::new(Model::from_bytes_as(&config, &file, WeightsChoice::Auto).unwrap())
}

/// A context longer than the CPU cache reserves at open (SmolLM2's 8,192
/// positions, Qwen2.5's 32,768): the cache opens with
/// `RESERVED_POSITIONS` rows and grows past them as tokens arrive, with the
/// same logits as a prefill of the whole prompt.
#[test]
fn a_long_context_cpu_cache_reserves_a_part_and_grows_past_it() {
    use decode_lab_engine::cpu::{CpuSession, RESERVED_POSITIONS};
    let (e, vocab, n_pos) = (8, 16, RESERVED_POSITIONS + 64);
    let model = one_layer_model(e, vocab, n_pos);
    let per_position = (2 * e * 4) as u64; // K and V, one layer, f32
    let tokens: Vec<u32> = (0..n_pos - 4).map(|i| (i * 7 % vocab) as u32).collect();
    let mut whole = CpuSession::new(model.clone());
    assert_eq!(whole.kv_bytes().allocated, per_position * RESERVED_POSITIONS as u64);
    let want = whole.forward(&tokens, Wanted::Last).unwrap();
    let mut stepped = CpuSession::new(model);
    let split = RESERVED_POSITIONS - 8;
    stepped.forward(&tokens[..split], Wanted::Last).unwrap();
    let mut got = Vec::new();
    for &t in &tokens[split..] {
        got = stepped.forward(&[t], Wanted::Last).unwrap();
    }
    assert!(rel_max_err(&got, &want) < LIMIT, "{}", rel_max_err(&got, &want));
    let bytes = stepped.kv_bytes();
    assert_eq!(bytes.in_use, per_position * tokens.len() as u64);
    assert!(
        bytes.allocated >= bytes.in_use
            && bytes.allocated > per_position * RESERVED_POSITIONS as u64
    );
}

/// A prompt longer than one GPU pass holds (`PASS_ROWS`): the GPU reads it
/// in two passes, the second attending to the cache the first wrote, and
/// every row's logits are the CPU engine's (which reads it in one).
#[test]
fn a_prompt_longer_than_a_gpu_pass_is_read_in_passes_with_the_cpu_logits() {
    use decode_lab_engine::gpu::PASS_ROWS;
    let (e, vocab, n_pos) = (16, 16, PASS_ROWS + 80);
    let model = one_layer_model(e, vocab, n_pos);
    let tokens: Vec<u32> = (0..PASS_ROWS + 40).map(|i| (i * 7 % vocab) as u32).collect();
    let mut sessions = sessions_on_both(&model).into_iter();
    let (_, mut cpu) = sessions.next().unwrap();
    let want = pollster::block_on(cpu.prefill(&tokens, Wanted::All)).unwrap();
    let want_next = pollster::block_on(cpu.decode(3)).unwrap();
    for (name, mut s) in sessions {
        let got = pollster::block_on(s.prefill(&tokens, Wanted::All)).unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        let err = rel_max_err(&got, &want);
        assert!(err < LIMIT, "{name}: {err}");
        assert_eq!(s.last_stats().submits, 2, "{name}: passes of at most {PASS_ROWS} rows");
        // And it decodes on from there.
        let next = pollster::block_on(s.decode(3)).unwrap();
        let err = rel_max_err(&next, &want_next);
        assert!(err < LIMIT, "{name} decode: {err}");
    }
}

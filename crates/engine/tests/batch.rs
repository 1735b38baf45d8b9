//! Batched decode on both engines and the bundled model: every sequence of a
//! batch (each at its own position, in its own KV cache) gets the logits its
//! unbatched run gets, sequences that sit a step out keep their place, one
//! step is one submit on the GPU, and a batch that cannot run is an error.
#![cfg(not(target_arch = "wasm32"))] // native test

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{rel_max_err, sessions_on_both, steps_on};
use decode_lab_engine::model::{Model, Tokenizer};
use decode_lab_engine::run::{Job, Run};
use decode_lab_engine::run_batch::BatchRun;
use decode_lab_engine::sample::argmax;
use decode_lab_engine::sample::Settings;
use decode_lab_engine::{Batch, EngineError, Session, Wanted};

/// Relative error allowed between the batched and the unbatched pass (the
/// GPU's batched step uses prefill's matmul kernels, its single decode the
/// fused ones: two summation orders).
const LIMIT: f32 = 1e-4;

fn model() -> Arc<Model> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    Arc::new(Model::from_dir(&dir).expect("the bundled model loads"))
}

/// Prompt `i`: its own tokens and its own length, so positions differ.
fn prompt(i: usize, vocab: usize) -> Vec<u32> {
    (0..3 + 5 * i).map(|j| ((j * 389 + i * 97 + 11) % vocab.min(2000)) as u32).collect()
}

/// `b` fresh sessions of one model on the engine `name` (forks of one empty
/// session), each with prompt `i` prefilled; returns them and each one's
/// next-token logits.
async fn prefilled(model: &Arc<Model>, name: &str, b: usize) -> (Vec<Session>, Vec<Vec<f32>>) {
    let (_, empty) = sessions_on_both(model).into_iter().find(|(n, _)| *n == name).unwrap();
    let mut sessions = Vec::new();
    let mut logits = Vec::new();
    for i in 0..b {
        let mut s = empty.fork().unwrap();
        logits.push(s.prefill(&prompt(i, model.config.vocab_size), Wanted::Last).await.unwrap());
        sessions.push(s);
    }
    (sessions, logits)
}

/// Runs `steps` greedy steps both ways; `sits_out(step, i)` says which
/// sequences skip a step. Returns the worst relative error.
async fn compare(
    model: &Arc<Model>,
    name: &str,
    b: usize,
    steps: usize,
    sits_out: fn(usize, usize) -> bool,
) -> f32 {
    let (batched, mut logits) = prefilled(model, name, b).await;
    let (mut alone, _) = prefilled(model, name, b).await;
    let mut batch = Batch::new(batched).unwrap();
    let vocab = model.config.vocab_size;
    let mut worst = 0.0f32;
    for step in 0..steps {
        let tokens: Vec<Option<u32>> =
            (0..b).map(|i| (!sits_out(step, i)).then(|| argmax(&logits[i]))).collect();
        let out = batch.decode(&tokens).await.unwrap();
        let stats = batch.last_stats();
        let active = tokens.iter().flatten().count();
        assert_eq!(out.len(), active * vocab, "{name} B={b} step {step}: rows");
        assert_eq!(stats.tokens, active);
        if name.starts_with("gpu") {
            assert_eq!(stats.submits, 1, "{name} B={b}: one submit per batched step");
        }
        let mut rows = out.chunks_exact(vocab);
        for (i, t) in tokens.iter().enumerate() {
            let Some(t) = t else { continue };
            let want = alone[i].decode(*t).await.unwrap();
            let got = rows.next().unwrap();
            let err = rel_max_err(got, &want);
            assert!(err <= LIMIT, "{name} B={b} step {step} sequence {i}: relative error {err:e}");
            assert_eq!(argmax(got), argmax(&want), "{name} B={b} step {step} sequence {i}");
            worst = worst.max(err);
            logits[i] = want;
        }
        for (i, s) in batch.sessions().iter().enumerate() {
            assert_eq!(s.pos(), alone[i].pos(), "{name} B={b} sequence {i}: position");
        }
    }
    worst
}

/// The bundled GPT-2, and a Llama-family model (each sequence's rotary
/// turns at its own position, its K/V heads grouped).
fn models() -> [(&'static str, Arc<Model>); 2] {
    let llama = common::fixtures().join("golden").join("llama_gqa");
    [("gpt2", model()), ("llama", Arc::new(Model::from_dir(&llama).unwrap()))]
}

#[test]
fn every_sequence_of_a_batch_gets_its_unbatched_logits() {
    for (family, model) in models() {
        for (name, _) in sessions_on_both(&model) {
            // The gpu profile's kernels at the other sizes: their cases (1 to 8 rows).
            let sizes: &[usize] = if name == "gpu-split" { &[3] } else { &[1, 3, 8] };
            for &b in sizes {
                let steps = steps_on(name, 24);
                let worst = pollster::block_on(compare(&model, name, b, steps, |_, _| false));
                eprintln!(
                    "{family} on {name} B={b}: worst relative error {worst:e} over {steps} steps"
                );
            }
        }
    }
}

#[test]
fn sequences_that_sit_a_step_out_keep_their_place() {
    let model = model();
    for (name, _) in sessions_on_both(&model) {
        // Sequence 1 every other step, sequence 3 from step 5 on (done early).
        let sits_out =
            |step: usize, i: usize| (i == 1 && step.is_multiple_of(2)) || (i == 3 && step >= 5);
        pollster::block_on(compare(&model, name, 4, steps_on(name, 12).max(6), sits_out));
    }
}

#[test]
fn a_batch_that_cannot_run_is_an_error() {
    let model = model();
    let n_positions = model.config.n_positions;
    for (name, _) in sessions_on_both(&model) {
        pollster::block_on(async {
            assert!(matches!(Batch::new(Vec::new()), Err(EngineError::Batch(_))));
            let (sessions, _) = prefilled(&model, name, 2).await;
            let mut batch = Batch::new(sessions).unwrap();
            let too_few = batch.decode(&[Some(1)]).await;
            assert!(matches!(too_few, Err(EngineError::Batch(_))), "{name}: {too_few:?}");
            let none = batch.decode(&[None, None]).await;
            assert!(matches!(none, Err(EngineError::NoTokens)), "{name}: {none:?}");
            let vocab = model.config.vocab_size as u32;
            let bad = batch.decode(&[Some(1), Some(vocab)]).await;
            assert!(matches!(bad, Err(EngineError::TokenOutOfRange { .. })), "{name}: {bad:?}");
            // A full context: sequence 0 filled to the last position.
            let pos = batch.sessions()[0].pos();
            let fill: Vec<u32> = vec![5; n_positions - pos];
            batch.prefill(0, &fill, Wanted::Last).await.unwrap();
            let full = batch.decode(&[Some(1), Some(1)]).await;
            assert!(matches!(full, Err(EngineError::ContextOverflow { .. })), "{name}: {full:?}");
            // Nothing moved: the failed steps changed no position.
            assert_eq!(batch.sessions()[1].pos(), prompt(1, 2000).len());
            assert!(batch.prefill(2, &[1], Wanted::Last).await.is_err());
        });
    }
    let mixed: Vec<Session> = sessions_on_both(&model).into_iter().map(|(_, s)| s).collect();
    if mixed.len() >= 2 {
        assert!(matches!(Batch::new(mixed), Err(EngineError::Batch(_))));
    }
}

/// The bundled tokenizer.
fn tokenizer() -> Tokenizer {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    Tokenizer::from_dir(&dir).expect("the bundled tokenizer loads")
}

/// Text of a run alone, and the texts of a batched run of `size` (each round one batched step).
async fn texts(
    session: Session,
    prompt: &[u32],
    job: &Job,
    size: usize,
) -> (Vec<String>, Vec<String>) {
    let tokenizer = tokenizer();
    let mut alone = Vec::new();
    for i in 0..size {
        let job = Job { seed: job.seed + i as u64, ..job.clone() };
        let mut run = Run::start_ids(session.fork().unwrap(), prompt.to_vec(), &job).await.unwrap();
        let mut text = String::new();
        loop {
            let step = run.step(&tokenizer, None).await.unwrap();
            text += &step.text;
            if step.done.is_some() {
                break;
            }
        }
        alone.push(text);
    }
    let mut run = BatchRun::start(session, prompt.to_vec(), job, size).await.unwrap();
    let mut batched = vec![String::new(); size];
    while !run.done() {
        for (text, step) in batched.iter_mut().zip(run.step(&tokenizer).await.unwrap()) {
            *text += &step.map(|s| s.text).unwrap_or_default();
        }
    }
    (alone, batched)
}

#[test]
fn each_batched_continuation_is_its_seeded_run_alone() {
    let model = model();
    let settings = Settings { temperature: 1.0, top_k: 40, ..Settings::default() };
    // A short prompt; and one near the end of the context, so every
    // continuation gets cropped and re-prefilled on its own mid-batch.
    let n_positions = model.config.n_positions;
    let long: Vec<u32> = (0..n_positions - 5).map(|j| ((j * 389 + 11) % 2000) as u32).collect();
    for (name, session) in sessions_on_both(&model) {
        // The gpu profile's long prefills crawl on lavapipe: its crop is
        // `bundled.rs`'s, its batch the short prompt's.
        let prompts = [(prompt(2, 2000), steps_on(name, 40)), (long.clone(), 12)];
        let prompts = if name == "gpu-split" { &prompts[..1] } else { &prompts[..] };
        for (prompt, max_tokens) in prompts.iter().cloned() {
            let job = Job { settings: settings.clone(), seed: 7, stop: vec![], max_tokens };
            let (alone, batched) =
                pollster::block_on(texts(session.fork().unwrap(), &prompt, &job, 4));
            assert_eq!(batched, alone, "{name}, prompt of {}", prompt.len());
            assert!(alone.iter().any(|t| t != &alone[0]), "{name}: the seeds give different texts");
        }
    }
}

/// The cost lessons' device figures: a copy rate and a read rate on both
/// engines, a per-dispatch cost on the GPU only, all finite.
#[test]
fn the_device_figures_are_measured() {
    let model = model();
    for (name, s) in sessions_on_both(&model).into_iter().take(2) {
        let f = pollster::block_on(s.device_figures()).unwrap();
        eprintln!("{name}: {f:?}");
        assert!(f.copy_bytes_per_s.is_finite() && f.copy_bytes_per_s > 1e6, "{name}: {f:?}");
        assert!(f.read_bytes_per_s.is_finite() && f.read_bytes_per_s > 1e6, "{name}: {f:?}");
        match name {
            "gpu" => assert!(f.dispatch_ms.is_some_and(|d| d.is_finite() && d >= 0.0), "{f:?}"),
            _ => assert_eq!(f.dispatch_ms, None),
        }
    }
}

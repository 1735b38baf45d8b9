//! Looking inside on request: both engines hand back the residual stream
//! (the embedding and every block's output) and every layer's attention
//! weights. The GPU's equal the CPU's, the lens of the last block is the
//! model's own logits, the weights are distributions that never look ahead,
//! and a probed prefill leaves the session as a plain one would.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use std::sync::Arc;

use common::{golden_model, rel_max_err, sessions_on_both};
use decode_lab_engine::lessons::lens;
use decode_lab_engine::model::Model;
use decode_lab_engine::{Inspection, Look, Wanted};

/// Relative error allowed between the engines (as the whole-model tests).
const LIMIT: f32 = 1e-4;

/// Odd sizes: n_embd 48, 3 heads, vocab 1000 (the golden fixture).
fn model() -> Arc<Model> {
    golden_model("tiny_odd")
}

const PROMPT: [u32; 7] = [5, 999, 3, 42, 0, 17, 640];
const BOTH: Look = Look { residuals: true, attention: true };

/// Each engine's inspection of `first` then (from where it left off) `then`.
fn inspections(model: &Arc<Model>, first: &[u32], then: &[u32]) -> Vec<(&'static str, Inspection)> {
    sessions_on_both(model)
        .into_iter()
        .map(|(name, mut s)| {
            pollster::block_on(async {
                if !first.is_empty() {
                    s.prefill(first, Wanted::Last).await.unwrap();
                }
                (name, s.prefill_inspected(then, Wanted::All, BOTH).await.unwrap())
            })
        })
        .collect()
}

#[test]
fn the_last_blocks_lens_is_the_models_logits_on_both_engines() {
    let model = model();
    let (n, e) = (PROMPT.len(), model.config.n_embd);
    let layers = model.config.n_layer + 1;
    let all = inspections(&model, &[], &PROMPT);
    for (name, got) in &all {
        let residuals = got.residuals.as_ref().unwrap();
        assert_eq!(residuals.len(), layers * n * e, "{name}: (n_layer + 1, tokens, n_embd)");
        let lens = lens::logits(&model, &residuals[(layers - 1) * n * e..]);
        let err = rel_max_err(&lens, &got.logits);
        assert!(err <= LIMIT, "{name}: lens of the last block vs logits {err:e}");
        if *name == "cpu" {
            assert_eq!(lens, got.logits, "the CPU engine runs the very same twins");
        }
    }
    if let [(_, cpu), (_, gpu)] = &all[..] {
        let (a, b) = (cpu.residuals.as_ref().unwrap(), gpu.residuals.as_ref().unwrap());
        for (l, (a, b)) in a.chunks(n * e).zip(b.chunks(n * e)).enumerate() {
            let err = rel_max_err(b, a);
            assert!(err <= LIMIT, "gpu layer {l}: relative error {err:e}");
        }
    }
}

#[test]
fn attention_weights_are_distributions_that_never_look_ahead_on_both_engines() {
    let model = model();
    let c = &model.config;
    // A second prefill at position 3: queries see the 3 earlier keys too.
    let (first, then) = (&PROMPT[..3], &PROMPT[3..]);
    let (n, pos0) = (then.len(), first.len());
    let n_cols = pos0 + n;
    let all = inspections(&model, first, then);
    for (name, got) in &all {
        let att = got.attention.as_ref().unwrap();
        assert_eq!(
            att.len(),
            c.n_layer * c.n_head * n * n_cols,
            "{name}: (n_layer, n_head, n, pos0 + n)"
        );
        for (k, row) in att.chunks_exact(n_cols).enumerate() {
            let query = pos0 + k % n;
            let sum: f32 = row[..=query].iter().sum();
            assert!((sum - 1.0).abs() <= 1e-5, "{name}: row {k} sums to {sum}");
            assert!(row[query + 1..].iter().all(|&v| v == 0.0), "{name}: row {k} looks ahead");
        }
    }
    if let [(_, cpu), (_, gpu)] = &all[..] {
        let (a, b) = (cpu.attention.as_ref().unwrap(), gpu.attention.as_ref().unwrap());
        let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
        assert!(worst <= 1e-5, "GPU attention weights vs CPU: {worst:e}");
    }
}

#[test]
fn an_inspected_prefill_leaves_the_session_as_a_plain_one() {
    let model = model();
    for ((name, mut probed), (_, mut plain)) in
        sessions_on_both(&model).into_iter().zip(sessions_on_both(&model))
    {
        pollster::block_on(async {
            let a = probed.prefill_inspected(&PROMPT, Wanted::Last, BOTH).await.unwrap().logits;
            let stats = probed.last_stats();
            let b = plain.prefill(&PROMPT, Wanted::Last).await.unwrap();
            let plain_stats = plain.last_stats();
            assert_eq!(a, b, "{name}: the copies change nothing");
            assert_eq!(probed.pos(), PROMPT.len());
            // The copies come back on top of the logits; the weights take one submit more.
            let c = &model.config;
            let n = PROMPT.len();
            let copies = (c.n_layer + 1) * n * c.n_embd * 4 + c.n_layer * c.n_head * n * n * 4;
            if name.starts_with("gpu") {
                assert_eq!(stats.bytes_read, plain_stats.bytes_read + copies, "{name}");
                assert_eq!(stats.submits, plain_stats.submits + 1);
                assert_eq!(stats.dispatches, plain_stats.dispatches + c.n_layer);
            }
            // The cache is the same: the next step agrees bit for bit.
            let a = probed.decode(12).await.unwrap();
            let b = plain.decode(12).await.unwrap();
            assert_eq!(a, b, "{name}: the step after");
        });
    }
}

//! The residual stream on request (the logit lens): both engines copy out the
//! embedding and every block's output; the GPU's equal the CPU's, the lens of
//! the last block is the model's own logits, and a probed prefill leaves the
//! session as a plain one would.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use std::sync::Arc;

use common::{golden_model, rel_max_err, sessions_on_both};
use decode_lab_engine::lens;
use decode_lab_engine::model::Model;
use decode_lab_engine::Wanted;

/// Relative error allowed between the engines (as the whole-model tests).
const LIMIT: f32 = 1e-4;

/// Odd sizes: n_embd 48, 3 heads, vocab 1000 (the golden fixture).
fn model() -> Arc<Model> {
    golden_model("tiny_odd")
}

const PROMPT: [u32; 7] = [5, 999, 3, 42, 0, 17, 640];

#[test]
fn the_last_blocks_lens_is_the_models_logits_on_both_engines() {
    let model = model();
    let (n, e, v) = (PROMPT.len(), model.config.n_embd, model.config.vocab_size);
    let layers = model.config.n_layer + 1;
    let mut cpu_residuals = None;
    for (name, mut s) in sessions_on_both(&model) {
        let (logits, residuals) =
            pollster::block_on(s.prefill_with_residuals(&PROMPT, Wanted::All)).unwrap();
        assert_eq!(residuals.len(), layers * n * e, "{name}: (n_layer + 1, tokens, n_embd)");
        assert_eq!(logits.len(), n * v);
        let last = &residuals[(layers - 1) * n * e..];
        let lens = lens::logits(&model, last);
        let err = rel_max_err(&lens, &logits);
        assert!(err <= LIMIT, "{name}: lens of the last block vs logits {err:e}");
        if name == "cpu" {
            assert_eq!(lens, logits, "the CPU engine runs the very same twins");
        }
        // Layer by layer, the GPU's copies equal the CPU's.
        match &cpu_residuals {
            None => cpu_residuals = Some(residuals),
            Some(want) => {
                for l in 0..layers {
                    let range = l * n * e..(l + 1) * n * e;
                    let err = rel_max_err(&residuals[range.clone()], &want[range]);
                    assert!(err <= LIMIT, "{name} layer {l}: relative error {err:e}");
                }
            }
        }
    }
}

#[test]
fn a_probed_prefill_leaves_the_session_as_a_plain_one() {
    let model = model();
    for ((name, mut probed), (_, mut plain)) in
        sessions_on_both(&model).into_iter().zip(sessions_on_both(&model))
    {
        pollster::block_on(async {
            let (a, _) = probed.prefill_with_residuals(&PROMPT, Wanted::Last).await.unwrap();
            let stats = probed.last_stats();
            let b = plain.prefill(&PROMPT, Wanted::Last).await.unwrap();
            let plain_stats = plain.last_stats();
            assert_eq!(a, b, "{name}: the copies change nothing");
            assert_eq!(probed.pos(), PROMPT.len());
            assert_eq!(
                (stats.dispatches, stats.submits),
                (plain_stats.dispatches, plain_stats.submits)
            );
            // The copies come back on top of the logits (same submit).
            let c = &model.config;
            let copies = (c.n_layer + 1) * PROMPT.len() * c.n_embd * 4;
            if name == "gpu" {
                assert_eq!(stats.bytes_read, plain_stats.bytes_read + copies, "{name}");
            }
            // The cache is the same: the next step agrees bit for bit.
            let a = probed.decode(12).await.unwrap();
            let b = plain.decode(12).await.unwrap();
            assert_eq!(a, b, "{name}: the step after");
        });
    }
}

//! Beam search against Hugging Face's own: `generate(num_beams=B)` from
//! `transformers` on the golden models (tools/golden/make_beam_golden.py
//! wrote `tests/fixtures/golden/beam.json`): B = 2, 3, 5; length penalty 0,
//! 1, 2; one end token, several and many (Hugging Face then ranks
//! (1 + n_eos)·B candidates a step: with eight, most of a step's 2·B best
//! end, and fewer than B would go on). Ours must return the same
//! hypotheses in the same order, with scores within 1e-4, on the CPU engine
//! and the GPU (its gpu profile on the widest cases only: see below).
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::beam::{BeamSearch, BeamSettings, Scoring};
use decode_lab_engine::Session;
use serde_json::Value;

/// Relative tolerance on a hypothesis's score: our f32 logits against
/// PyTorch's, summed over at most 10 tokens.
const SCORE_RTOL: f64 = 1e-4;

struct Case {
    model: String,
    prompt: Vec<u32>,
    settings: BeamSettings,
    /// Hugging Face's hypotheses, best first: tokens (the end token last
    /// when it ended on one) and score.
    beams: Vec<(Vec<u32>, f64)>,
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect()
}

fn cases() -> Vec<Case> {
    let path = common::fixtures().join("golden").join("beam.json");
    let json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    cases
        .iter()
        .map(|c| Case {
            model: c["model"].as_str().unwrap().to_string(),
            prompt: ids(&c["prompt"]),
            settings: BeamSettings {
                width: c["width"].as_u64().unwrap() as usize,
                max_new_tokens: c["max_new_tokens"].as_u64().unwrap() as usize,
                scoring: Scoring {
                    length_penalty: c["length_penalty"].as_f64().unwrap(),
                    prompt_in_length: false,
                },
                ends: ids(&c["ends"]),
            },
            beams: c["beams"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (ids(&b["tokens"]), b["score"].as_f64().unwrap()))
                .collect(),
        })
        .collect()
}

#[test]
fn beam_search_matches_transformers_generate() {
    let cases = cases();
    assert_eq!(
        cases.len(),
        81,
        "3 models × B 2, 3, 5 × penalty 0, 1, 2 × one, several or many end tokens"
    );
    // The file exercises what matters: hypotheses that end early, and several end tokens.
    assert!(cases.iter().any(|c| c.beams.iter().any(|b| b.0.len() < c.settings.max_new_tokens)));
    assert!(cases.iter().any(|c| c.settings.ends.len() >= 8));
    let mut checked = 0;
    // One session per engine and model (compiling a GPU model's pipelines is
    // the slow part on lavapipe); each search starts from a fork of it.
    let mut opened: Vec<(String, Vec<(&str, Session)>)> = Vec::new();
    for case in &cases {
        if opened.last().is_none_or(|(m, _)| *m != case.model) {
            let model = common::golden_model(&case.model);
            opened.push((case.model.clone(), common::sessions_on_both(&model)));
        }
        let (_, sessions) = opened.last().unwrap();
        for (engine, base) in sessions {
            // The gpu profile's batched kernels are slow on lavapipe (≈3 s a
            // search): it runs the widest searches at penalty 1, every model and ends.
            let widest = case.settings.width == 5 && case.settings.scoring.length_penalty == 1.0;
            if *engine != "cpu" && *engine != "gpu" && !widest {
                continue;
            }
            let session = base.fork().unwrap();
            let what = format!(
                "{} on {engine}: B={} penalty={} ends={:?}",
                case.model,
                case.settings.width,
                case.settings.scoring.length_penalty,
                case.settings.ends
            );
            let mut search =
                pollster::block_on(BeamSearch::start(session, &case.prompt, case.settings.clone()))
                    .unwrap();
            while pollster::block_on(search.step()).unwrap() {}
            let ours = search.beams();
            let tokens: Vec<&Vec<u32>> = ours.iter().map(|b| &b.tokens).collect();
            let want: Vec<&Vec<u32>> = case.beams.iter().map(|b| &b.0).collect();
            assert_eq!(tokens, want, "{what}");
            for (b, (_, score)) in ours.iter().zip(&case.beams) {
                let err = (b.score - score).abs() / score.abs().max(1e-6);
                assert!(err <= SCORE_RTOL, "{what}: score {} vs transformers {score}", b.score);
            }
            checked += 1;
        }
    }
    assert!(checked >= cases.len(), "every case ran on at least the CPU engine");
}

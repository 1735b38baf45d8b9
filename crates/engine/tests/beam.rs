//! Beam search over both engines: width 1 is greedy, scores are the summed
//! log-probabilities of the chosen tokens, the recorded history is the
//! search's own (paths, fates, no two live beams alike), seating children in
//! their parents' slots gives what forking every child gives with fewer
//! copies, and GPU and CPU agree.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::beam::{beam_search, candidates, BeamSearch, BeamSettings, Fate, Scoring};
use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::GpuSession;
use decode_lab_engine::sample::{argmax, log_softmax};
use decode_lab_engine::{Session, Wanted};

fn sessions() -> Vec<Session> {
    let model = common::golden_model("tiny_odd");
    let mut s = vec![Session::Cpu(CpuSession::new(model.clone()))];
    for (_, profile) in common::PROFILES {
        if let Some(gpu) = common::gpu_model(&model, profile) {
            s.push(Session::Gpu(GpuSession::new(gpu).unwrap()));
        }
    }
    s
}

const PROMPT: [u32; 4] = [17, 402, 9, 77];
const VOCAB: usize = 1000;

fn settings(width: usize, max_new_tokens: usize, ends: &[u32]) -> BeamSettings {
    BeamSettings { width, max_new_tokens, scoring: Scoring::DEFAULT, ends: ends.to_vec() }
}

fn search(session: Session, s: BeamSettings) -> BeamSearch {
    let mut search = pollster::block_on(BeamSearch::start(session, &PROMPT, s)).unwrap();
    while pollster::block_on(search.step()).unwrap() {}
    search
}

#[test]
fn width_one_is_greedy() {
    for mut session in sessions() {
        let mut logits = pollster::block_on(session.prefill(&PROMPT, Wanted::Last)).unwrap();
        let mut greedy = Vec::new();
        for _ in 0..8 {
            let t = argmax(&logits);
            greedy.push(t);
            logits = pollster::block_on(session.decode(t)).unwrap();
        }
        let beams = pollster::block_on(beam_search(session, &PROMPT, settings(1, 8, &[]))).unwrap();
        assert_eq!(beams[0].tokens, greedy);
    }
}

#[test]
fn beams_are_ranked_and_their_logprobs_add_up() {
    let mut results = Vec::new();
    for session in sessions() {
        let mut check = session.fork().unwrap();
        let beams = pollster::block_on(beam_search(session, &PROMPT, settings(3, 6, &[]))).unwrap();
        assert_eq!(beams.len(), 3);
        assert!(beams.windows(2).all(|w| w[0].score >= w[1].score), "best first");
        for b in &beams {
            // Recompute the path's log-probability with one fresh prefill.
            check.rewind(0).unwrap();
            let all: Vec<u32> = PROMPT.iter().chain(&b.tokens).copied().collect();
            let rows = pollster::block_on(check.prefill(&all, Wanted::All)).unwrap();
            let sum: f64 = b
                .tokens
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    log_softmax(&rows[(PROMPT.len() - 1 + i) * VOCAB..][..VOCAB])[t as usize]
                })
                .sum();
            assert!((sum - b.logprob).abs() < 1e-3, "logprob {} vs recomputed {sum}", b.logprob);
            assert!((b.score - b.logprob / b.tokens.len() as f64).abs() < 1e-12);
        }
        results.push(beams.iter().map(|b| b.tokens.clone()).collect::<Vec<_>>());
    }
    if results.len() == 2 {
        assert_eq!(results[0], results[1], "GPU and CPU beams agree");
    }
}

#[test]
fn an_end_token_finishes_a_beam() {
    for session in sessions() {
        // Make the most likely first token the "end": its beam must end right there.
        let mut probe = session.fork().unwrap();
        let first = argmax(&pollster::block_on(probe.prefill(&PROMPT, Wanted::Last)).unwrap());
        let s = search(session, settings(2, 5, &[first]));
        assert_eq!(s.steps()[0].candidates[0].fate, Fate::Finished);
        let beams = s.beams();
        assert!(s.hypotheses().iter().any(|h| h.tokens == vec![first] && h.ended), "{beams:?}");
        assert!(beams.iter().all(|b| b.tokens[..b.tokens.len() - 1].iter().all(|&t| t != first)));
    }
}

/// The history is the search: every step ranks at most 2·B candidates best
/// first, keeps B distinct beams, each candidate's cumulative is its parent's
/// plus its own log-probability, and every hypothesis's path spells its tokens.
#[test]
fn the_history_records_every_candidate_and_its_fate() {
    for session in sessions() {
        let width = 4;
        let s = search(session, settings(width, 10, &[]));
        assert_eq!(s.steps().len(), 10);
        for (i, step) in s.steps().iter().enumerate() {
            let c = &step.candidates;
            assert_eq!(c.len(), 2 * width);
            assert!(c.windows(2).all(|w| w[0].cumulative >= w[1].cumulative), "step {i} ranked");
            assert_eq!(step.kept.len(), width);
            for (beam, &rank) in step.kept.iter().enumerate() {
                assert_eq!(c[rank].fate, Fate::Kept { beam });
            }
            if i > 0 {
                let before = &s.steps()[i - 1];
                for cand in c {
                    let parent = &before.candidates[before.kept[cand.parent]];
                    assert!((cand.cumulative - (parent.cumulative + cand.logprob)).abs() < 1e-12);
                }
            }
        }
        assert_eq!(s.hypotheses().len(), width, "no end token: the live beams are the answer");
        let mut texts: Vec<&Vec<u32>> = s.hypotheses().iter().map(|h| &h.tokens).collect();
        for h in s.hypotheses() {
            let path = s.path(h.node);
            let spelt: Vec<u32> =
                path.iter().map(|&(st, r)| s.steps()[st].candidates[r].token).collect();
            assert_eq!(spelt, h.tokens);
        }
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), width, "no two live beams are the same text");
    }
}

/// Seating a beam's first child in its parent's slot (copying caches only
/// for later children) gives exactly what forking a session for every child
/// gives, with fewer copies.
#[test]
fn seated_children_equal_forking_every_child_with_fewer_copies() {
    for session in sessions() {
        let width = 3;
        let reference = fork_every_child(session.fork().unwrap(), width, 7);
        let s = search(session, settings(width, 7, &[]));
        let got: Vec<(Vec<u32>, f64)> =
            s.beams().into_iter().map(|b| (b.tokens, b.logprob)).collect();
        assert_eq!(got.len(), reference.len());
        for ((t, lp), (rt, rlp)) in got.iter().zip(&reference) {
            assert_eq!(t, rt);
            assert!((lp - rlp).abs() < 1e-4, "{lp} vs {rlp}");
        }
        let cost = s.cost();
        assert_eq!(
            cost.passes, 7,
            "the prefill and 6 batched steps (the last step decodes nothing)"
        );
        assert_eq!(cost.decoded, 6 * width);
        assert_eq!(s.steps()[0].copies, width - 1, "the prompt's cache copied to the other slots");
        assert_eq!(cost.fork_copies, 6 * width);
        assert!(cost.kv_copies < cost.fork_copies, "{cost:?}");
        assert!(cost.kv_bytes_copied < cost.fork_bytes);
        let per_row = 48 * 4 * 2 * 2; // n_embd × f32 × (K, V) × n_layer
        assert_eq!(s.steps()[0].copy_bytes, ((width - 1) * PROMPT.len() * per_row) as u64);
        let summed: u64 = s.steps().iter().map(|st| st.copy_bytes).sum();
        assert_eq!(summed, cost.kv_bytes_copied);
    }
}

/// The plain algorithm: every kept child gets a fork of its parent's session.
fn fork_every_child(mut session: Session, width: usize, steps: usize) -> Vec<(Vec<u32>, f64)> {
    let logits = pollster::block_on(session.prefill(&PROMPT, Wanted::Last)).unwrap();
    let mut live = vec![(session, Vec::<u32>::new(), 0.0, logits)];
    for step in 0..steps {
        let cum: Vec<f64> = live.iter().map(|l| l.2).collect();
        let rows: Vec<&[f32]> = live.iter().map(|l| l.3.as_slice()).collect();
        let mut next = Vec::new();
        for c in candidates(&cum, &rows, width, &[], false) {
            if let Fate::Kept { .. } = c.fate {
                let mut s = live[c.parent].0.fork().unwrap();
                let mut tokens = live[c.parent].1.clone();
                tokens.push(c.token);
                let logits = if step + 1 < steps {
                    pollster::block_on(s.decode(c.token)).unwrap()
                } else {
                    Vec::new()
                };
                next.push((s, tokens, c.cumulative, logits));
            }
        }
        live = next;
    }
    live.into_iter().map(|l| (l.1, l.2)).collect()
}

#[test]
fn re_ranking_needs_no_model_and_bad_settings_are_errors() {
    let session = sessions().remove(0);
    let mut probe = session.fork().unwrap();
    let logits = pollster::block_on(probe.prefill(&PROMPT, Wanted::Last)).unwrap();
    // Ten likely tokens end a hypothesis: they finish at different lengths.
    let mut ids: Vec<u32> = (0..VOCAB as u32).collect();
    ids.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
    let s = search(session, settings(3, 8, &ids[1..11]));
    let lengths: std::collections::BTreeSet<usize> =
        s.hypotheses().iter().map(|h| h.tokens.len()).collect();
    assert!(lengths.len() > 1, "hypotheses of several lengths: {lengths:?}");
    let short = s.ranked(Scoring { length_penalty: -1.0, prompt_in_length: false })[0].0;
    let long = s.ranked(Scoring { length_penalty: 2.0, prompt_in_length: false })[0].0;
    assert!(s.hypotheses()[short].tokens.len() <= s.hypotheses()[long].tokens.len());
    let best = s.beams();
    assert_eq!(best[0].tokens, s.hypotheses()[s.ranked(Scoring::DEFAULT)[0].0].tokens);

    for (width, penalty, want) in
        [(0, 1.0, "beam width"), (17, 1.0, "beam width"), (2, f64::NAN, "length penalty")]
    {
        let bad = BeamSettings {
            scoring: Scoring { length_penalty: penalty, prompt_in_length: false },
            ..settings(width, 4, &[])
        };
        let err = pollster::block_on(BeamSearch::start(sessions().remove(0), &PROMPT, bad))
            .err()
            .unwrap();
        assert!(err.to_string().contains(want), "{err}");
    }
    let err = pollster::block_on(BeamSearch::start(sessions().remove(0), &[], settings(2, 4, &[])))
        .err()
        .unwrap();
    assert!(err.to_string().contains("empty") || err.to_string().contains("prompt"), "{err}");
}

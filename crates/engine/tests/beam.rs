//! Beam search over both engines: width 1 is greedy, scores are the summed
//! log-probabilities of the chosen tokens, and GPU and CPU agree.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::{GpuModel, GpuSession};
use decode_lab_engine::sample::{argmax, beam_search, log_softmax};
use decode_lab_engine::{Session, Wanted};

fn sessions() -> Vec<Session> {
    let model = common::golden_model("tiny_odd");
    let mut s = vec![Session::Cpu(CpuSession::new(model.clone()))];
    if let Some((ctx, _)) = common::gpu() {
        let gpu = pollster::block_on(GpuModel::new(ctx.clone(), model)).unwrap();
        s.push(Session::Gpu(GpuSession::new(gpu).unwrap()));
    }
    s
}

const PROMPT: [u32; 4] = [17, 402, 9, 77];

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
        let beams = pollster::block_on(beam_search(session, &PROMPT, 1, 8, 1.0, None)).unwrap();
        assert_eq!(beams[0].tokens, greedy);
    }
}

#[test]
fn beams_are_ranked_and_their_logprobs_add_up() {
    let mut results = Vec::new();
    for session in sessions() {
        let mut check = session.fork().unwrap();
        let beams = pollster::block_on(beam_search(session, &PROMPT, 3, 6, 1.0, None)).unwrap();
        assert_eq!(beams.len(), 3);
        assert!(beams.windows(2).all(|w| w[0].score >= w[1].score), "best first");
        for b in &beams {
            // Recompute the path's log-probability with one fresh prefill.
            check.rewind(0).unwrap();
            let all: Vec<u32> = PROMPT.iter().chain(&b.tokens).copied().collect();
            let rows = pollster::block_on(check.prefill(&all, Wanted::All)).unwrap();
            let vocab = 1000;
            let sum: f64 = b
                .tokens
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    log_softmax(&rows[(PROMPT.len() - 1 + i) * vocab..][..vocab])[t as usize]
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
fn an_eos_token_finishes_a_beam() {
    for session in sessions() {
        // Make the most likely first token the "EOS": its beam must end right there.
        let mut probe = session.fork().unwrap();
        let first = argmax(&pollster::block_on(probe.prefill(&PROMPT, Wanted::Last)).unwrap());
        let beams =
            pollster::block_on(beam_search(session, &PROMPT, 2, 5, 1.0, Some(first))).unwrap();
        assert!(beams.iter().any(|b| b.tokens == vec![first]), "{beams:?}");
        assert!(beams.iter().all(|b| b.tokens[..b.tokens.len() - 1].iter().all(|&t| t != first)));
    }
}

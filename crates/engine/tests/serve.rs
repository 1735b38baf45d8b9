//! Serving a trace (issue 35, in progress): under every scheduler, each
//! request's text equals its run alone, bit for bit on the CPU engine.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::model::Model;
use decode_lab_engine::sample::{Sampler, Settings};
use decode_lab_engine::serve::{figures, replay, trace, Scheduler};
use decode_lab_engine::{Batch, Session, Wanted};
use pollster::block_on;

fn bundled() -> Arc<Model> {
    Arc::new(Model::from_dir(&common::fixtures().join("../../www/models/shakespeare")).unwrap())
}

/// A request alone: its prompt, then its own sampler's tokens.
fn alone(model: &Arc<Model>, prompt: &[u32], settings: &Settings, seed: u64, n: usize) -> Vec<u32> {
    let mut s = CpuSession::new(model.clone());
    let mut logits = s.forward(prompt, Wanted::Last).unwrap();
    let mut sampler = Sampler::new(settings.clone(), seed).unwrap();
    let mut history = prompt.to_vec();
    let mut out = Vec::new();
    while out.len() < n {
        let t = sampler.next(&logits, &history).unwrap().token;
        if Some(t) == model.config.eos_token_id {
            break;
        }
        out.push(t);
        history.push(t);
        logits = s.forward(&[t], Wanted::Last).unwrap();
    }
    out
}

#[test]
fn every_scheduler_serves_each_request_its_run_alone() {
    let model = bundled();
    let prompts: Vec<Vec<u32>> = vec![vec![50, 17, 301], vec![9, 44], vec![120, 7, 7, 300, 2]];
    let requests = trace::poisson(7, 0.6, prompts.len(), 10, 3).unwrap();
    let settings = Settings { temperature: 0.8, top_k: 40, ..Settings::default() };
    let want: Vec<Vec<u32>> = requests
        .iter()
        .map(|r| alone(&model, &prompts[r.prompt], &settings, r.seed, r.max_tokens))
        .collect();
    for scheduler in [Scheduler::Once, Scheduler::Static { timeout: 3 }, Scheduler::Continuous] {
        let sessions = (0..3).map(|_| Session::Cpu(CpuSession::new(model.clone()))).collect();
        let mut batch = Batch::new(sessions).unwrap();
        let eos = model.config.eos_token_id;
        let out =
            block_on(replay(&mut batch, &requests, &prompts, &settings, scheduler, eos)).unwrap();
        for (i, served) in out.served.iter().enumerate() {
            assert_eq!(served.tokens, want[i], "{scheduler:?}: request {i}");
            assert!(served.admitted.unwrap() >= requests[i].arrival);
        }
        let f = figures(&requests, &out);
        assert_eq!(f.tokens, want.iter().map(Vec::len).sum::<usize>());
        assert!(f.utilisation > 0.0 && f.utilisation <= 1.0);
        if scheduler != (Scheduler::Static { timeout: 3 }) {
            assert_eq!(f.wasted, 0, "{scheduler:?}");
        }
        eprintln!("{scheduler:?}: {f:?}");
    }
}

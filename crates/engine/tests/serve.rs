//! Serving a trace: under every scheduler, each request's text equals its
//! run alone, bit for bit on the CPU engine, sampled and greedy; on the GPU
//! engine (both kernel profiles) against its own run alone.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::sync::Arc;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::model::Model;
use decode_lab_engine::sample::Settings;
use decode_lab_engine::serve::{figures, replay, run_alone, trace, Cell, Scheduler};
use decode_lab_engine::{Batch, Session};
use pollster::block_on;

fn bundled() -> Arc<Model> {
    Arc::new(Model::from_dir(&common::fixtures().join("../../www/models/shakespeare")).unwrap())
}

/// A request alone on the CPU engine: the text every scheduler must give it.
fn alone(model: &Arc<Model>, prompt: &[u32], settings: &Settings, seed: u64, n: usize) -> Vec<u32> {
    let mut s = Session::Cpu(CpuSession::new(model.clone()));
    block_on(run_alone(&mut s, prompt, settings, seed, n)).unwrap()
}

const SCHEDULERS: [Scheduler; 3] =
    [Scheduler::Once, Scheduler::Static { timeout: 3 }, Scheduler::Continuous];

fn prompts() -> Vec<Vec<u32>> {
    vec![vec![50, 17, 301], vec![9, 44], vec![120, 7, 7, 300, 2]]
}

#[test]
fn every_scheduler_serves_each_request_its_run_alone() {
    let sampled = Settings { temperature: 0.8, top_k: 40, ..Settings::default() };
    let greedy = Settings { temperature: 0.0, ..Settings::default() };
    for settings in [sampled, greedy] {
        serves_each_request_its_run_alone(&settings);
    }
}

fn serves_each_request_its_run_alone(settings: &Settings) {
    let model = bundled();
    let prompts = prompts();
    let requests = trace::poisson(7, 0.6, prompts.len(), 10, 3).unwrap();
    let want: Vec<Vec<u32>> = requests
        .iter()
        .map(|r| alone(&model, &prompts[r.prompt], settings, r.seed, r.max_tokens))
        .collect();
    for scheduler in SCHEDULERS {
        let sessions = (0..3).map(|_| Session::Cpu(CpuSession::new(model.clone()))).collect();
        let mut batch = Batch::new(sessions).unwrap();
        let eos = model.config.eos_token_id;
        let out =
            block_on(replay(&mut batch, &requests, &prompts, settings, scheduler, eos, |_| true))
                .unwrap();
        for (i, served) in out.served.iter().enumerate() {
            assert_eq!(served.tokens, want[i], "{scheduler:?}: request {i}");
            assert!(served.admitted.unwrap() >= requests[i].arrival);
        }
        // One slot's row one at a time (its utilisation is of that slot), three otherwise.
        let width = if scheduler == Scheduler::Once { 1 } else { 3 };
        assert!(out.cells.iter().all(|c| c.len() == width), "{scheduler:?}");
        let f = figures(&requests, &out);
        assert_eq!(f.tokens, want.iter().map(Vec::len).sum::<usize>());
        assert!(f.utilisation > 0.0 && f.utilisation <= 1.0);
        if scheduler != (Scheduler::Static { timeout: 3 }) {
            assert_eq!(f.wasted, 0, "{scheduler:?}");
        }
        eprintln!("{scheduler:?}: {f:?}");
    }
}

#[test]
fn continuous_batching_on_every_engine_serves_each_request_its_run_alone() {
    let model = bundled();
    let prompts = prompts();
    let requests = trace::poisson(5, 0.8, prompts.len(), 6, 11).unwrap();
    let settings = Settings { temperature: 0.8, top_k: 40, ..Settings::default() };
    for (name, mut session) in common::sessions_on_both(&model) {
        let want: Vec<Vec<u32>> = requests
            .iter()
            .map(|r| {
                block_on(run_alone(
                    &mut session,
                    &prompts[r.prompt],
                    &settings,
                    r.seed,
                    r.max_tokens,
                ))
                .unwrap()
            })
            .collect();
        let sessions = (0..3).map(|_| session.fork().unwrap()).collect();
        let mut batch = Batch::new(sessions).unwrap();
        let eos = model.config.eos_token_id;
        let out = block_on(replay(
            &mut batch,
            &requests,
            &prompts,
            &settings,
            Scheduler::Continuous,
            eos,
            |_| true,
        ))
        .unwrap();
        for (i, served) in out.served.iter().enumerate() {
            assert_eq!(served.tokens, want[i], "{name}: request {i}");
        }
    }
}

#[test]
fn a_replay_stops_when_asked_and_keeps_what_it_served() {
    let model = bundled();
    let prompts = prompts();
    let requests = trace::poisson(6, 2.0, prompts.len(), 8, 5).unwrap();
    let settings = Settings::default();
    let sessions = (0..2).map(|_| Session::Cpu(CpuSession::new(model.clone()))).collect();
    let mut batch = Batch::new(sessions).unwrap();
    let out = block_on(replay(
        &mut batch,
        &requests,
        &prompts,
        &settings,
        Scheduler::Continuous,
        None,
        |r| r.cells.len() < 3,
    ))
    .unwrap();
    assert!(out.stopped);
    assert_eq!(out.cells.len(), 3);
    assert!(out.cells[0].iter().any(|c| matches!(c, Cell::Prefill(_))));
    assert!(out.served.iter().any(|s| s.ended.is_none()));
}

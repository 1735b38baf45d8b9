//! Speculative decoding (issue 35): greedy text is the target's own, token
//! for token, on the CPU engine, the GPU in both kernel profiles and the CPU
//! worker, with the target's own first blocks as the draft; the
//! accept-or-resample rule emits tokens distributed as the target's (a χ²
//! test over 100,000 seeded draws); the same seed gives the same sampled
//! text; bad settings are clear errors.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::rc::Rc;
use std::sync::Arc;

use decode_lab_engine::model::Model;
use decode_lab_engine::remote::{Host, Link, Loopback, RemoteModel};
use decode_lab_engine::run::Job;
use decode_lab_engine::sample::Settings;
use decode_lab_engine::speculate::accept::{inverse_cdf, verdict, Verdict};
use decode_lab_engine::speculate::generate;
use decode_lab_engine::Session;
use pollster::block_on;
use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The bundled model, as the page loads it.
fn bundled() -> Arc<Model> {
    let dir = common::fixtures().join("../../www/models/shakespeare");
    Arc::new(Model::from_dir(&dir).unwrap())
}

/// Sessions of `model` on every engine, each with its engine's name; the
/// worker loads the bundled files and makes `model` (a draft: its first
/// blocks) from them, as the page's worker does.
fn sessions(model: &Arc<Model>) -> Vec<(&'static str, Session)> {
    let mut all = common::sessions_on_both(model);
    let dir = common::fixtures().join("../../www/models/shakespeare");
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let file = std::fs::read(dir.join("model.safetensors")).unwrap();
    let host = Host::load(&config, &file, model.format()).unwrap();
    let remote = RemoteModel::new(Rc::new(Loopback::new(host)) as Rc<dyn Link>, model);
    all.push(("worker", Session::Remote(remote.session())));
    all
}

fn greedy_job(max_tokens: usize) -> Job {
    let settings = Settings { temperature: 0.0, ..Settings::default() };
    Job { settings, seed: 1, stop: Vec::new(), max_tokens }
}

#[test]
fn greedy_speculation_writes_the_targets_own_text_on_every_engine() {
    let target = bundled();
    let draft = Arc::new(target.first_blocks(2).unwrap());
    let prompt: Vec<u32> = vec![50, 17, 301, 9, 44];
    let targets = sessions(&target);
    let drafts = sessions(&draft);
    assert_eq!(targets.len(), drafts.len());
    for ((engine, mut alone), ((_, mut t), (_, mut d))) in
        sessions(&target).into_iter().zip(targets.into_iter().zip(drafts))
    {
        // Fewer tokens on the gpu profile: its kernels crawl on lavapipe, a CPU.
        let n = common::steps_on(engine, 24);
        let want = common::greedy_ids(&mut alone, &prompt, n);
        for k in [2, 5] {
            t.rewind(0).unwrap();
            d.rewind(0).unwrap();
            let out =
                block_on(generate(&mut t, &mut d, &prompt, &greedy_job(n), k, |_| true)).unwrap();
            assert_eq!(out.tokens, want, "{engine}, K = {k}");
            let passes = out.rounds.len();
            assert!(passes < n, "{engine}, K = {k}: {passes} target passes for {n} tokens");
            let alpha = out.acceptance();
            assert!((0.0..=1.0).contains(&alpha));
            eprintln!(
                "{engine} K = {k}: α {alpha:.3}, {:.2} tokens per target pass",
                out.tokens_per_pass()
            );
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_sampled_text() {
    let target = bundled();
    let draft = Arc::new(target.first_blocks(1).unwrap());
    let prompt: Vec<u32> = vec![50, 17, 301];
    let settings = Settings { temperature: 0.9, top_k: 40, ..Settings::default() };
    let job = Job { settings, seed: 7, stop: Vec::new(), max_tokens: 30 };
    let run = || {
        let mut t = Session::Cpu(decode_lab_engine::cpu::CpuSession::new(target.clone()));
        let mut d = Session::Cpu(decode_lab_engine::cpu::CpuSession::new(draft.clone()));
        block_on(generate(&mut t, &mut d, &prompt, &job, 4, |_| true)).unwrap()
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert_eq!(a.tokens.len(), 30);
}

/// Pearson's χ² of `counts` against `p` · n over the tokens with p > 0; a
/// token with p = 0 drawn at all fails outright.
fn chi_square(counts: &[u64], p: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    counts
        .iter()
        .zip(p)
        .map(|(&c, &pi)| {
            if pi == 0.0 {
                assert_eq!(c, 0, "a token the target never draws was emitted");
                return 0.0;
            }
            let e = pi * n as f64;
            (c as f64 - e).powi(2) / e
        })
        .sum()
}

/// Over 100,000 seeded draws on fixed distributions, the emitted token —
/// the drafted one kept, or the target's resample — is distributed as the
/// target's p: χ² below the 0.1 % critical value (df = kept tokens − 1).
#[test]
fn accept_or_resample_emits_the_targets_distribution() {
    // (p, q): a draft too sure of one token; one that misses a token p
    // keeps; one that keeps a token p cut (top-k); p = q.
    let cases: [([f64; 6], [f64; 6]); 4] = [
        ([0.30, 0.25, 0.20, 0.10, 0.10, 0.05], [0.70, 0.10, 0.05, 0.05, 0.05, 0.05]),
        ([0.40, 0.30, 0.20, 0.10, 0.00, 0.00], [0.50, 0.50, 0.00, 0.00, 0.00, 0.00]),
        ([0.50, 0.50, 0.00, 0.00, 0.00, 0.00], [0.20, 0.20, 0.20, 0.20, 0.10, 0.10]),
        ([0.10, 0.20, 0.30, 0.20, 0.10, 0.10], [0.10, 0.20, 0.30, 0.20, 0.10, 0.10]),
    ];
    // χ²(0.999) for df = 1 … 5.
    let critical = [10.828, 13.816, 16.266, 18.467, 20.515];
    let mut rng = ChaCha20Rng::seed_from_u64(35);
    let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    for (p, q) in cases {
        let mut counts = [0u64; 6];
        for _ in 0..100_000 {
            let drafted = inverse_cdf(q.iter().copied(), 1.0, uniform());
            let emitted = match verdict(&p, &q, drafted, uniform(), uniform()) {
                Verdict::Accept => drafted,
                Verdict::Reject(t) => t,
            };
            counts[emitted as usize] += 1;
        }
        let df = p.iter().filter(|&&x| x > 0.0).count() - 1;
        let chi2 = chi_square(&counts, &p);
        assert!(
            chi2 < critical[df - 1],
            "p {p:?}, q {q:?}: χ² {chi2:.2} ≥ {} (counts {counts:?})",
            critical[df - 1]
        );
    }
}

#[test]
fn bad_settings_are_clear_errors() {
    let target = bundled();
    let other = common::golden_model("tiny_odd");
    let cpu = |m: &Arc<Model>| Session::Cpu(decode_lab_engine::cpu::CpuSession::new(m.clone()));
    let job = greedy_job(4);
    let e = block_on(generate(&mut cpu(&target), &mut cpu(&other), &[1], &job, 2, |_| true));
    assert!(e.unwrap_err().to_string().contains("share the tokenizer"));
    let draft = Arc::new(target.first_blocks(1).unwrap());
    for k in [0, 17] {
        let e = block_on(generate(&mut cpu(&target), &mut cpu(&draft), &[1], &job, k, |_| true));
        assert!(e.unwrap_err().to_string().contains("1 to 16"));
    }
    let stop = Job { stop: vec!["\n".into()], ..greedy_job(4) };
    let e = block_on(generate(&mut cpu(&target), &mut cpu(&draft), &[1], &stop, 2, |_| true));
    assert!(e.unwrap_err().to_string().contains("stop strings"));
    assert!(target.first_blocks(4).unwrap_err().to_string().contains("1 to 3"));
}

#[test]
fn alpha_counts_only_the_drafts_the_target_judged() {
    use decode_lab_engine::speculate::{Outcome, Round};
    // One rejection after a kept token (the last two never judged), one round all kept.
    let rounds = vec![
        Round { drafted: vec![1, 2, 3, 4], accepted: 1, token: 9 },
        Round { drafted: vec![5, 6, 7, 8], accepted: 4, token: 9 },
    ];
    let out = Outcome { rounds, ..Outcome::default() };
    assert_eq!(out.acceptance(), 5.0 / 6.0);
    assert_eq!(out.tokens_per_pass(), 3.5);
}

//! Grouped K/V heads (issue 34): a multi-head checkpoint converted to G
//! groups (`Model::with_kv_groups`) equals `transformers` GPT-2 loaded with
//! each group's pooled K/V weights repeated for every head of the group
//! (tools/golden/make_gqa_golden.py), ≤ 1e-4 relative, on the CPU engine,
//! the GPU in both kernel profiles and the CPU worker; its cache holds
//! 2 · n_layer · (n_embd / (n_head / G)) · tokens · 4 bytes; and it keeps
//! a cache policy as the full-headed model does.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::rc::Rc;
use std::sync::Arc;

use decode_lab_engine::kv_policy::KvPolicy;
use decode_lab_engine::model::Model;
use decode_lab_engine::remote::{Host, Link, Loopback, RemoteModel};
use decode_lab_engine::{Session, Wanted};
use pollster::block_on;
use safetensors::SafeTensors;

const MODEL: &str = "untied_f16";

/// The golden's tokens and, per group count, the logits (tokens, vocab).
fn golden() -> (Vec<u32>, Vec<(usize, Vec<f32>)>) {
    let path = common::fixtures().join("golden").join(MODEL).join("kv_groups.safetensors");
    let bytes = std::fs::read(path).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let groups: Vec<usize> =
        serde_json::from_str(&meta.metadata().as_ref().unwrap()["groups"]).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let ids: Vec<i64> = bytemuck::pod_collect_to_vec(st.tensor("tokens").unwrap().data());
    let logits = groups.iter().enumerate().map(|(i, &g)| {
        (g, bytemuck::pod_collect_to_vec(st.tensor(&format!("logits_{i}")).unwrap().data()))
    });
    (ids.iter().map(|&i| i as u32).collect(), logits.collect())
}

/// `model` (grouped) in a CPU worker that loaded the checkpoint's files itself.
fn worker(model: &Arc<Model>) -> Session {
    let dir = common::fixtures().join("golden").join(MODEL);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let file = std::fs::read(dir.join("model.safetensors")).unwrap();
    let host = Host::load(&config, &file, model.format()).unwrap();
    let remote = RemoteModel::new(Rc::new(Loopback::new(host)) as Rc<dyn Link>, model);
    Session::Remote(remote.session())
}

#[test]
fn grouped_heads_match_transformers_with_pooled_weights_on_every_engine() {
    let loaded = common::golden_model(MODEL);
    let (tokens, cases) = golden();
    let c = &loaded.config;
    for (groups, want) in cases {
        let model = Arc::new(loaded.with_kv_groups(groups).unwrap());
        assert_eq!(model.config.n_kv_head, groups);
        let mut sessions = common::sessions_on_both(&model);
        sessions.push(("worker", worker(&model)));
        for (engine, mut s) in sessions {
            let what = format!("{engine}, {groups} K/V groups");
            let got = block_on(s.prefill(&tokens, Wanted::All)).unwrap();
            let err = common::rel_max_err(&got, &want);
            assert!(err <= 1e-4, "{what}: rel err {err}");
            // Decoding through the cache gives the same last rows.
            s.rewind(tokens.len() - 3).unwrap();
            for (i, &t) in tokens[tokens.len() - 3..].iter().enumerate() {
                let row = block_on(s.decode(t)).unwrap();
                let at = (tokens.len() - 3 + i) * c.vocab_size;
                let err = common::rel_max_err(&row, &want[at..][..c.vocab_size]);
                assert!(err <= 1e-4, "{what}: decode step {i}: rel err {err}");
            }
            let kv_dim = c.n_embd / (c.n_head / groups);
            let bytes = (2 * c.n_layer * kv_dim * tokens.len() * 4) as u64;
            assert_eq!(block_on(s.kv_bytes()).unwrap().in_use, bytes, "{what}: cache bytes");
        }
    }
}

#[test]
fn a_grouped_cache_keeps_a_policy_as_every_engine_does() {
    let model = Arc::new(common::golden_model(MODEL).with_kv_groups(2).unwrap());
    let (tokens, _) = golden();
    let policy = KvPolicy::parse("heavy:4,recent:4").unwrap();
    let mut cpu = decode_lab_engine::cpu::CpuSession::new(model.clone()).with_policy(policy);
    let want = cpu.forward(&tokens, Wanted::All).unwrap();
    let mut sessions = common::sessions_on_both(&model);
    sessions.push(("worker", worker(&model)));
    for (engine, s) in sessions.into_iter().skip(1) {
        let mut s = s.with_kv_policy(policy).unwrap();
        let got = block_on(s.prefill(&tokens, Wanted::All)).unwrap();
        let err = common::rel_max_err(&got, &want);
        assert!(err <= 1e-4, "{engine}: rel err {err} against the CPU engine");
        assert_eq!(block_on(s.slots()).unwrap().0, cpu.held(), "{engine}: the same slots");
    }
}

#[test]
fn groups_that_do_not_divide_the_heads_are_refused() {
    let model = common::golden_model(MODEL);
    for bad in [0, 3, 5] {
        let e = model.with_kv_groups(bad).unwrap_err().to_string();
        assert!(e.contains("must divide the model's 4 heads"), "{bad}: {e}");
    }
    let twice = model.with_kv_groups(2).unwrap().with_kv_groups(1).unwrap_err().to_string();
    assert!(twice.contains("already grouped"), "{twice}");
}

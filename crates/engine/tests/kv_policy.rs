//! A cache under a budget (issue 34, CPU engine so far): tokens a policy
//! evicts leave the cache, attention reads only what was kept, and the
//! logits equal `transformers` GPT-2 run with an attention mask hiding the
//! evicted tokens (tools/golden/make_kv_golden.py); a budget at least the
//! sequence's length gives the full cache's logits bit for bit; the cache's
//! bytes are exactly the kept rows.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::kv_policy::KvPolicy;
use decode_lab_engine::Wanted;
use safetensors::SafeTensors;

#[test]
fn eviction_matches_transformers_with_the_evicted_tokens_masked() {
    let model = common::golden_model("tiny_odd");
    let bytes =
        std::fs::read(common::fixtures().join("golden/tiny_odd/kv_policy.safetensors")).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let names: Vec<String> =
        serde_json::from_str(&meta.metadata().as_ref().unwrap()["policies"]).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let ids: Vec<i64> = bytemuck::pod_collect_to_vec(st.tensor("tokens").unwrap().data());
    let tokens: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
    let vocab = model.config.vocab_size;
    let per_token = (2 * model.config.n_layer * model.config.n_embd * 4) as u64;
    for (i, name) in names.iter().enumerate() {
        let want: Vec<f32> =
            bytemuck::pod_collect_to_vec(st.tensor(&format!("logits_{i}")).unwrap().data());
        let policy = KvPolicy::parse(name).unwrap();
        // Token by token, and as one prefill (which goes in token by token past the budget).
        let mut s = CpuSession::new(model.clone()).with_policy(policy);
        for (t, &token) in tokens.iter().enumerate() {
            let got = s.forward(&[token], Wanted::Last).unwrap();
            let err = common::rel_max_err(&got, &want[t * vocab..][..vocab]);
            assert!(err <= 1e-4, "{name} step {t}: rel err {err}");
            let held = s.held().len() as u64;
            assert_eq!(held, (t as u64 + 1).min(policy.budget().unwrap() as u64));
            assert_eq!(s.kv_bytes().in_use, held * per_token, "{name}: the kept rows' bytes");
        }
        if policy.ranks_by_mass() {
            // Kept by the attention received, not by position: with no mass
            // (ties everywhere) the earliest would stay.
            let positions: Vec<usize> = (0..tokens.len()).collect();
            let by_position = policy.keep(&positions, &vec![0.0; positions.len()]);
            assert_ne!(s.held(), by_position, "{name}: the heavy hitters are not the earliest");
        }
        let mut p = CpuSession::new(model.clone()).with_policy(policy);
        let all = pollster::block_on(p.prefill(&tokens, Wanted::All)).unwrap();
        let err = common::rel_max_err(&all, &want);
        assert!(err <= 1e-4, "{name} as one prefill: rel err {err}");
        assert_eq!(p.held(), s.held(), "{name}: the prefill keeps what the steps kept");
    }
}

#[test]
fn a_budget_as_long_as_the_sequence_changes_nothing() {
    let model = common::golden_model("tiny_odd");
    let tokens: Vec<u32> = (0..30).map(|i| (i * 37 + 5) % 1000).collect();
    let mut full = CpuSession::new(model.clone());
    let want = full.forward(&tokens, Wanted::All).unwrap();
    for policy in ["window:30", "sinks:4,window:26", "heavy:10,recent:20", "window:64"] {
        let mut s = CpuSession::new(model.clone()).with_policy(KvPolicy::parse(policy).unwrap());
        let got = s.forward(&tokens, Wanted::All).unwrap();
        assert_eq!(common::bytes(&got), common::bytes(&want), "{policy}");
    }
}

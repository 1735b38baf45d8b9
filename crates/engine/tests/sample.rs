//! The sampling pipeline: hand-computed course examples (reference values from
//! Python's `math.exp`, not from this code), properties over random logits and
//! settings, a 100,000-draw statistical test, and bad settings as errors.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

#[path = "shared/portable.rs"]
mod portable;

use decode_lab_engine::sample::{explain, processors, Sampler, Settings, StageKind};
use proptest::prelude::*;

const COURSE: [f32; 5] = [3.0, 2.0, 1.0, 0.5, 0.1];
const FRANCE: [f32; 11] = [8.0, 2.0, 2.0, 1.5, 0.5, 0.3, -1.0, -2.0, -5.0, -8.0, -10.0];

fn with(f: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = Settings::default();
    f(&mut s);
    s
}

fn close(got: &[f64], want: &[f64], atol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= atol, "element {i}: got {g}, want {w}");
    }
}

#[test]
fn temperature_matches_hand_computed_softmax() {
    let cases: [(f64, [f64; 5]); 4] = [
        (0.1, [0.999954600056, 4.5397869e-05, 2.061e-09, 1.4e-11, 0.0]),
        (0.5, [0.859537461809, 0.116325745846, 0.015742977762, 0.005791517861, 0.002602296721]),
        (1.0, [0.609636050153, 0.224272569448, 0.082505267519, 0.050041974338, 0.033544138542]),
        (2.0, [0.400723677173, 0.243051196278, 0.147418002423, 0.114809255726, 0.0939978684]),
    ];
    for (t, want) in cases {
        let e = explain(&COURSE, &[], &with(|s| s.temperature = t)).unwrap();
        // Logits arrive as f32: 0.1f32 is off by 1.5e-9, which moves p by up to ~1e-9.
        close(e.final_probs(), &want, 1e-8);
    }
}

#[test]
fn capital_of_france_under_top_k_and_top_p() {
    let e = explain(&FRANCE, &[], &with(|s| s.top_k = 3)).unwrap();
    let mut want = [0.0; 11];
    want[..3].copy_from_slice(&[0.995066951257, 0.002466524371, 0.002466524371]);
    close(e.final_probs(), &want, 1e-8);
    let top_k = e.stage(StageKind::TopK);
    assert_eq!((top_k.kept_count, top_k.removed.clone()), (3, (3..11).collect()));
    assert!((top_k.kept_mass - (0.9924198447 + 2.0 * 0.00245996285)).abs() < 1e-9);
    // p(" Paris") = 0.992 already crosses 0.9: only the top token is kept.
    let e = explain(&FRANCE, &[], &with(|s| s.top_p = 0.9)).unwrap();
    assert_eq!(e.kept(), (0..11).map(|i| i == 0).collect::<Vec<_>>());
    assert_eq!(e.stages[3].removed.len(), 10);
}

#[test]
fn same_p_keeps_one_token_when_confident_and_many_when_long_tailed() {
    let confident = explain(&FRANCE, &[], &with(|s| s.top_p = 0.9)).unwrap();
    let flat: Vec<f32> = (0..20).map(|i| -(i as f32) * 0.05).collect();
    let long_tailed = explain(&flat, &[], &with(|s| s.top_p = 0.9)).unwrap();
    assert_eq!(confident.stages[3].kept_count, 1);
    assert!(long_tailed.stages[3].kept_count >= 17, "{}", long_tailed.stages[3].kept_count);
}

#[test]
fn top_p_keeps_the_crossing_token() {
    // probs at T=1: 0.6096, 0.2243, 0.0825, ...: 0.6096 < 0.7, so the second token crosses.
    let e = explain(&COURSE, &[], &with(|s| s.top_p = 0.7)).unwrap();
    assert_eq!(e.kept(), vec![true, true, false, false, false]);
}

#[test]
fn min_p_keeps_tokens_above_a_share_of_the_top() {
    // 0.1 · 0.6096 = 0.061: keeps 0.6096, 0.2243, 0.0825.
    let e = explain(&COURSE, &[], &with(|s| s.min_p = 0.1)).unwrap();
    assert_eq!(e.kept(), vec![true, true, true, false, false]);
    assert_eq!(e.stages[4].kind, StageKind::MinP);
}

#[test]
fn top_k_ties_go_to_the_lower_id() {
    let e = explain(&[1.0, 2.0, 2.0, 2.0], &[], &with(|s| s.top_k = 2)).unwrap();
    assert_eq!(e.kept(), vec![false, true, true, false]);
}

#[test]
fn processors_follow_their_definitions() {
    let mut l = vec![2.0, -2.0, 1.0];
    processors::repetition_penalty(&mut l, &[0, 1], 2.0);
    assert_eq!(l, vec![1.0, -4.0, 1.0]);
    let mut l = vec![1.0, 1.0, 1.0];
    processors::frequency_presence(&mut l, &[2, 2, 0], 0.5, 0.25);
    assert_eq!(l, vec![0.25, 1.0, -0.25]);
    // History 5 6 7 5 6: the bigram prefix "6" was followed by 7 → 7 is banned for n = 2.
    let mut l = vec![0.0; 8];
    processors::no_repeat_ngram(&mut l, &[5, 6, 7, 5, 6], 2);
    assert_eq!(l.iter().position(|v| *v == f64::NEG_INFINITY), Some(7));
    assert_eq!(l.iter().filter(|v| v.is_infinite()).count(), 1);
    // Shorter histories than n hold no n-gram: nothing is banned (and nothing underflows).
    for history in [&[][..], &[5][..], &[5, 6][..]] {
        let mut l = vec![0.0; 8];
        processors::no_repeat_ngram(&mut l, history, 3);
        assert!(l.iter().all(|v| *v == 0.0));
    }
    let mut l = vec![0.0; 3];
    processors::logit_bias(&mut l, &[(1, 5.0), (9, 1.0)]);
    assert_eq!(l, vec![0.0, 5.0, 0.0]);
}

#[test]
fn drawn_token_reports_its_probability_and_rank() {
    let e = explain(&COURSE, &[], &Settings::default()).unwrap();
    let c = e.draw(0.99); // past 0.6096 + 0.2243 + 0.0825 + 0.0500: the last token
    assert_eq!((c.token, c.rank), (4, 5));
    assert!((c.prob - 0.033544138542).abs() < 1e-8);
}

#[test]
fn hundred_thousand_draws_match_the_final_distribution() {
    let settings = with(|s| {
        s.temperature = 0.8;
        s.top_k = 4;
    });
    let logits = [1.0, 0.5, 0.4, -0.3, 2.0, -1.0];
    let want = explain(&logits, &[], &settings).unwrap().final_probs().to_vec();
    let mut sampler = Sampler::new(settings, 12345).unwrap();
    let n = 100_000;
    let mut counts = [0usize; 6];
    for _ in 0..n {
        counts[sampler.next(&logits, &[]).unwrap().token as usize] += 1;
    }
    for (i, (&c, &p)) in counts.iter().zip(&want).enumerate() {
        let freq = c as f64 / n as f64;
        // 5 standard deviations of a binomial proportion; removed tokens exactly 0.
        let bound = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
        assert!((freq - p).abs() <= bound, "token {i}: frequency {freq}, probability {p}");
    }
    assert_eq!(counts[5], 0, "a token cut by top-k is never drawn");
}

#[test]
fn the_same_seed_gives_the_same_draws() {
    let draws = |seed| {
        let mut s = Sampler::new(Settings::default(), seed).unwrap();
        (0..20).map(|_| s.next(&COURSE, &[]).unwrap().token).collect::<Vec<_>>()
    };
    assert_eq!(draws(7), draws(7));
    assert_ne!(draws(7), draws(8));
    // The stream itself is part of the contract (checked in wasm too: tests/browser.rs).
    assert_eq!(draws(42), portable::EXPECTED_DRAWS_SEED_42);
}

#[test]
fn explanations_are_bit_identical_to_wasm() {
    assert_eq!(portable::explanation_fingerprint(), portable::EXPLANATION_FINGERPRINT);
}

#[test]
fn bad_settings_are_clear_errors() {
    let cases: [(Settings, &str); 8] = [
        (with(|s| s.temperature = -1.0), "temperature must be a finite number ≥ 0"),
        (with(|s| s.temperature = f64::INFINITY), "got inf"),
        (with(|s| s.temperature = f64::NAN), "temperature"),
        (with(|s| s.top_k = -1), "top-k must be ≥ 0"),
        (with(|s| s.top_p = 1.5), "top-p must be between 0 and 1"),
        (with(|s| s.top_p = f64::NAN), "top-p"),
        (with(|s| s.min_p = -0.1), "min-p must be between 0 and 1"),
        (with(|s| s.repetition_penalty = 0.0), "repetition penalty must be a number > 0"),
    ];
    for (settings, want) in cases {
        let e = explain(&COURSE, &[], &settings).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let e = explain(&[1.0, f32::NAN], &[], &Settings::default()).unwrap_err().to_string();
    assert!(e.contains("logit 1 is NaN"), "{e}");
    let e = explain(&[], &[], &Settings::default()).unwrap_err().to_string();
    assert!(e.contains("vocabulary is empty"), "{e}");
}

/// Entropy and kept mass against Python's `math`: −Σ p log2 p of
/// softmax([3, 2, 1, 0.5, 0.1] / T), and of its top 3 renormalised.
#[test]
fn entropy_and_kept_mass_match_hand_computed_values() {
    for (t, want) in
        [(0.5, 0.7084140227760862), (1.0, 1.5964274429797092), (2.0, 2.1110022430979853)]
    {
        let e = explain(&COURSE, &[], &with(|s| s.temperature = t)).unwrap();
        assert!(
            (e.stages[1].entropy_bits - want).abs() < 1e-9,
            "T {t}: {}",
            e.stages[1].entropy_bits
        );
        assert!((e.stages[4].entropy_bits - want).abs() < 1e-9);
    }
    let e = explain(&COURSE, &[], &with(|s| s.top_k = 3)).unwrap();
    assert!((e.raw_entropy_bits - 1.5964274429797092).abs() < 1e-9);
    assert!((e.stages[2].entropy_bits - 1.200892977978363).abs() < 1e-9);
    assert!((e.stages[2].kept_mass - 0.9164138871202021).abs() < 1e-9);
    assert_eq!((e.stages[2].kept_count, &e.stages[2].removed[..]), (3, &[3, 4][..]));
    // Stages that cut nothing keep all the mass and the entropy.
    assert_eq!((e.stages[3].kept_mass, e.stages[3].entropy_bits), (1.0, e.stages[2].entropy_bits));
    let greedy = explain(&COURSE, &[], &with(|s| s.temperature = 0.0)).unwrap();
    assert_eq!(greedy.stages[4].entropy_bits, 0.0);
}

/// Tiny (even subnormal) and huge temperatures stay finite: the max is
/// subtracted before dividing, and nothing multiplies by 1/T.
#[test]
fn extreme_temperatures_stay_finite() {
    for t in [5e-324, 1e-300, 1e-6, 1e6, 1e300] {
        let e = explain(&FRANCE, &[], &with(|s| s.temperature = t)).unwrap();
        for stage in &e.stages {
            assert!(stage.probs.iter().all(|p| p.is_finite()), "T {t}, {:?}", stage.kind);
            assert!(stage.entropy_bits.is_finite() && stage.entropy_bits >= 0.0, "T {t}");
        }
        let sum: f64 = e.final_probs().iter().sum();
        assert!((sum - 1.0).abs() < 1e-12, "T {t}: sum {sum}");
    }
    // Tiny T is greedy; huge T is uniform over the 11 tokens.
    assert_eq!(
        explain(&FRANCE, &[], &with(|s| s.temperature = 1e-300)).unwrap().final_probs()[0],
        1.0
    );
    let hot = explain(&FRANCE, &[], &with(|s| s.temperature = 1e300)).unwrap();
    assert!((hot.stages[1].entropy_bits - 11f64.log2()).abs() < 1e-9);
}

fn logits_strategy() -> impl Strategy<Value = Vec<f32>> {
    let value = prop_oneof![
        8 => -20.0f32..20.0,
        1 => Just(f32::NEG_INFINITY),
        1 => Just(1e30f32),
        1 => Just(-1e30f32),
    ];
    (1usize..60_000)
        .prop_flat_map(move |n| proptest::collection::vec(value.clone(), n))
        .prop_filter("at least one finite logit", |l| l.iter().any(|v| v.is_finite()))
}

/// Few distinct values, so most tokens tie with many others: the rank order's
/// later keys (then the id) decide every cut.
fn tied_logits_strategy() -> impl Strategy<Value = Vec<f32>> {
    (1usize..60_000).prop_flat_map(|n| proptest::collection::vec((0u8..20).prop_map(f32::from), n))
}

fn settings_strategy() -> impl Strategy<Value = Settings> {
    (0.0f64..3.0, 0i64..50, 0.0f64..=1.0, 0.0f64..=1.0, 0.5f64..2.0).prop_map(|(t, k, p, m, r)| {
        Settings {
            temperature: if t < 0.2 { 0.0 } else { t },
            top_k: k,
            top_p: p,
            min_p: m,
            repetition_penalty: r,
            ..Settings::default()
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_stage_is_a_distribution(logits in logits_strategy(), settings in settings_strategy()) {
        let history: Vec<u32> = (0..10).map(|i| (i * 7919) % logits.len() as u32).collect();
        let e = explain(&logits, &history, &settings).unwrap();
        for stage in &e.stages {
            let sum: f64 = stage.probs.iter().sum();
            prop_assert!(stage.probs.iter().all(|p| p.is_finite() && *p >= 0.0), "{:?}", stage.kind);
            prop_assert!((sum - 1.0).abs() <= 1e-5, "{:?} sums to {sum}", stage.kind);
            prop_assert!(stage.kept_count >= 1);
        }
        // Removed tokens are never drawn, whatever the uniform number.
        let kept = e.kept();
        for u in [0.0, 0.25, 0.5, 0.75, 0.999_999] {
            prop_assert!(kept[e.draw(u).token as usize]);
        }
    }

    #[test]
    fn k1_and_t0_are_greedy(logits in logits_strategy()) {
        let greedy = explain(&logits, &[], &with(|s| s.temperature = 0.0)).unwrap();
        let k1 = explain(&logits, &[], &with(|s| s.top_k = 1)).unwrap();
        let top = decode_lab_engine::sample::argmax(&logits) as usize;
        prop_assert_eq!(greedy.final_probs()[top], 1.0);
        prop_assert_eq!(greedy.kept(), k1.kept());
        prop_assert_eq!(k1.final_probs()[top], 1.0);
    }

    #[test]
    fn top_p_keeps_the_minimal_prefix(logits in logits_strategy(), p in 0.0f64..1.0) {
        let e = explain(&logits, &[], &with(|s| s.top_p = p)).unwrap();
        let before = &e.stages[2].probs;
        let is_kept = e.kept();
        let order = e.top(logits.len());
        let kept: Vec<u32> = order.iter().copied().filter(|&i| is_kept[i as usize]).collect();
        // The kept set is a prefix of the ranking...
        prop_assert_eq!(&kept[..], &order[..kept.len()]);
        // ...whose mass reaches p, and which is short of p without its last token.
        let mass: f64 = kept.iter().map(|&i| before[i as usize]).sum();
        let last = before[*kept.last().unwrap() as usize];
        prop_assert!(mass >= p - 1e-12 || kept.len() == e.stages[2].kept_count);
        prop_assert!(kept.len() == 1 || mass - last < p);
    }
}

#[test]
fn stop_strings_match_across_pieces_and_are_not_emitted() {
    use decode_lab_engine::sample::{StopMatcher, Stopped};
    let mut m = StopMatcher::new(&["\nEND".to_string(), "bc".to_string()]);
    assert_eq!(m.push("Hello wo"), Stopped::No("Hello wo".into()));
    assert_eq!(m.push("rld\nE"), Stopped::No("rld".into())); // "\nE" may start "\nEND"
    assert_eq!(m.push("ND and more"), Stopped::Yes(String::new()));
    let mut m = StopMatcher::new(&["bc".to_string()]);
    assert_eq!(m.push("ab"), Stopped::No("a".into()));
    assert_eq!(m.push("c tail"), Stopped::Yes(String::new()));
    // A false start is released once it can no longer match.
    let mut m = StopMatcher::new(&["é!".to_string()]);
    assert_eq!(m.push("café"), Stopped::No("caf".into()));
    assert_eq!(m.push("?"), Stopped::No("é?".into()));
    assert_eq!(m.flush(), "");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The selection-based cuts against the textbook method: sort the whole
    /// vocabulary, keep the first k, then walk the cumulative sum to p.
    #[test]
    fn cuts_match_full_sort_reference(
        logits in prop_oneof![logits_strategy(), tied_logits_strategy()],
        t in 0.05f64..3.0, k in 0i64..3000, p in 0.0f64..1.0,
    ) {
        let e = explain(&logits, &[], &with(|s| { s.temperature = t; s.top_k = k; s.top_p = p; })).unwrap();
        let tempered = &e.stages[1].probs;
        let processed = &e.stages[0].probs;
        let mut order: Vec<usize> = (0..logits.len()).filter(|&i| tempered[i] > 0.0).collect();
        order.sort_by(|&a, &b| {
            tempered[b].total_cmp(&tempered[a]).then(processed[b].total_cmp(&processed[a])).then(a.cmp(&b))
        });
        let k = if k == 0 { order.len() } else { (k as usize).min(order.len()) };
        let after_k: f64 = order[..k].iter().map(|&i| tempered[i]).sum();
        let mut n = 0;
        let mut cum = 0.0;
        for &i in &order[..k] {
            cum += tempered[i] / after_k;
            n += 1;
            if cum >= p {
                break;
            }
        }
        let mut want = vec![false; logits.len()];
        order[..n.max(1)].iter().for_each(|&i| want[i] = true);
        let got: Vec<bool> = e.stages[3].probs.iter().map(|&q| q > 0.0).collect();
        prop_assert_eq!(got, want);
        let top = e.top(n.max(1));
        prop_assert_eq!(top.iter().map(|&i| i as usize).collect::<Vec<_>>(), order[..n.max(1)].to_vec());
    }
}

#[test]
fn stages_follow_their_kinds_and_processors_report_what_they_changed() {
    use decode_lab_engine::sample::Processor;
    let settings = Settings {
        repetition_penalty: 1.5,
        frequency_penalty: 0.5,
        no_repeat_ngram: 2,
        ..Settings::default()
    };
    let logits = [1.0f32, 2.0, 3.0, 0.5, -1.0, 0.0];
    // Tokens 0 and 1 were seen; the bigram (0, 1) occurred and the last token is 0.
    let history = [0, 1, 0, 1, 0];
    let e = explain(&logits, &history, &settings).unwrap();
    for (stage, kind) in e.stages.iter().zip(StageKind::ALL) {
        assert_eq!(stage.kind, kind);
        assert_eq!(e.stage(kind), stage);
    }
    let effects: Vec<(Processor, usize)> =
        e.effects.iter().map(|f| (f.processor, f.changed)).collect();
    let want = [
        (Processor::RepetitionPenalty, 2),
        (Processor::FrequencyPenalty, 2),
        (Processor::NoRepeatNgram, 1), // token 1 banned once, however often it followed 0
    ];
    assert_eq!(effects, want);
    assert_eq!(e.stage(StageKind::Processors).removed, vec![1]);
    let off = explain(&logits, &history, &Settings::default()).unwrap();
    assert!(off.effects.is_empty(), "processors that are off report nothing");
}

//! `logits=` and `labels=` as an author writes them (the input is split at
//! the first NUL byte into the two): parsed logits are numbers or -inf with
//! at least one number, and the sampling pipeline explains them without a
//! panic.
#![no_main]

use contract::parse_sets;
use engine::sample::{explain, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (logits, labels) = match text.split_once('\0') {
        Some((l, b)) => (l, Some(b)),
        None => (&text[..], None),
    };
    let mut notices = Vec::new();
    let Ok(parsed) = parse_sets(logits, labels, &mut notices) else { return };
    for set in &parsed.sets {
        assert!(set.iter().all(|l| l.is_finite() || *l == f32::NEG_INFINITY));
        assert!(set.iter().any(|l| l.is_finite()));
        let settings =
            Settings { temperature: 0.7, top_p: 0.9, min_p: 0.05, ..Settings::default() };
        explain(set, &[], &settings).expect("parsed logits are explainable");
    }
});

//! A page's query string, read by the very function the app reads it with
//! (`read_page`: route, presets, every control, backend), plus the compare
//! widget's lists, `model=` (`model_base`) and the quiz's questions. Never a
//! panic; every number taken lies in its control's range; no notice echoes a
//! long value whole; no model address with a scheme other than http(s); a
//! quiz written back reads as the same quiz.
#![no_main]

use contract::{column_values, model_base, read_page, Input, Page, Query, Val, Widget};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let search = String::from_utf8_lossy(data);
    let q = Query::parse(&search);
    let Page { route, values, mut notices, .. } = read_page(&q);
    column_values(&q, Widget::COMPARE_COLUMN_CONTROLS, [[0.0; 2]; 4], &mut notices);
    let _ = route.shown.to_param();
    let quiz = contract::quiz::read(&q, &mut notices);
    assert!(quiz.len() <= contract::quiz::MAX_QUESTIONS);
    let written: Vec<String> = contract::quiz::to_params(&quiz)
        .iter()
        .map(|(n, v)| {
            let value: String = form_urlencoded::byte_serialize(v.as_bytes()).collect();
            format!("{n}={value}")
        })
        .collect();
    let again = contract::quiz::read(&Query::parse(&written.join("&")), &mut Vec::new());
    assert_eq!(again, quiz, "the quiz written back: {written:?}");
    for (control, val) in values {
        if let (Input::Number { range, .. }, Val::Number(v)) = (control.spec().input, val) {
            assert!((range.min..=range.max).contains(&v), "{control:?} = {v}");
        }
    }
    if let Some(model) = q.get("model") {
        match model_base(model) {
            Ok(base) => {
                let scheme = contract::model_ref::scheme(&base);
                let plain = scheme.as_deref().is_none_or(|s| s == "http" || s == "https");
                assert!(plain, "model= gave {base:?}");
            }
            Err(why) => notices.push(why),
        }
    }
    for n in &notices {
        assert!(n.chars().count() < 400, "a notice of {} characters", n.chars().count());
    }
});

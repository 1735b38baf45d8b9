//! A page's query string, read by the very function the app reads it with
//! (`read_page`: route, presets, every control, backend), plus the compare
//! widget's lists, and `model=` (`model_base`). Never a panic; every number
//! taken lies in its control's range; no notice echoes a long value whole;
//! no model address with a scheme other than http(s).
#![no_main]

use contract::{column_values, model_base, read_page, Input, Page, Query, Val, Widget};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let search = String::from_utf8_lossy(data);
    let q = Query::parse(&search);
    let Page { route, values, mut notices, .. } = read_page(&q);
    column_values(&q, Widget::COMPARE_COLUMN_CONTROLS, [[0.0; 2]; 4], &mut notices);
    let _ = route.shown.to_param();
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

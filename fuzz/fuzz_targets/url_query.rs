//! A page's query string, read as the app reads it: the route (`widget`,
//! `embed`, `controls`), every control's value, the compare widget's lists
//! and `backend`. Never a panic; every number taken lies in its control's
//! range; no notice echoes a long value whole.
#![no_main]

use contract::{
    backend_cpu, column_values, read_controls, Control, Input, Query, Route, Val, Widget,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let search = String::from_utf8_lossy(data);
    let q = Query::parse(&search);
    let mut notices = Vec::new();
    let route = Route::from_query(&q, &mut notices);
    let presets = route.widget.map_or(&[][..], Widget::presets);
    let values = read_controls(&q, presets, &[], &mut notices);
    column_values(&q, [Control::Temperature, Control::TopK], [[0.0; 2]; 4], &mut notices);
    backend_cpu(&q, &mut notices);
    let _ = route.shown.to_param();
    for (control, val) in values {
        if let (Input::Number { range, .. }, Val::Number(v)) = (control.spec().input, val) {
            assert!((range.min..=range.max).contains(&v), "{control:?} = {v}");
        }
    }
    for n in &notices {
        assert!(n.chars().count() < 400, "a notice of {} characters", n.chars().count());
    }
});

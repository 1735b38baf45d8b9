//! The URL contract natively: the control table is consistent, every value a
//! link can carry is read, rounded or clamped with a notice, and hostile
//! query strings (huge, NaN, repeated, unicode, markup) never panic and are
//! never echoed in full.

use decode_lab_contract::{
    backend_cpu, column_values, parse_logits, parse_sets, read_controls, read_page, Control,
    Drives, Input, Page, Preset, Query, Route, Shown, Val, WeightsChoice, Widget, SPECS,
};
use engine::storage::format::Format;

fn read(search: &str) -> (Vec<(Control, Val)>, Vec<String>) {
    let mut notices = Vec::new();
    let values = read_controls(&Query::parse(search), &[], &[], &mut notices);
    (values, notices)
}

fn number(values: &[(Control, Val)], control: Control) -> Option<f64> {
    values.iter().find(|(c, _)| *c == control).and_then(|(_, v)| match v {
        Val::Number(n) => Some(*n),
        Val::Text(_) => None,
    })
}

#[test]
fn the_table_is_consistent() {
    for (i, spec) in SPECS.iter().enumerate() {
        assert_eq!(spec.control as usize, i, "{}: row order = enum order", spec.name);
        assert_eq!(Control::from_name(spec.name), Some(spec.control));
        assert_eq!(spec.testid(), spec.name.replace('_', "-"));
        assert!(!spec.label.is_empty() && !spec.help.is_empty(), "{}", spec.name);
        if let Input::Number { range, whole, default } = spec.input {
            assert!(range.min < range.max && range.step > 0.0, "{}", spec.name);
            assert!((range.min..=range.max).contains(&default), "{} default", spec.name);
            assert_eq!(whole, range.step == 1.0, "{}: whole numbers step by 1", spec.name);
        }
    }
    let pipeline = Widget::Pipeline.default_controls();
    assert!(pipeline.contains(&Control::NoRepeatNgram) && !pipeline.contains(&Control::Seed));
    let generate = Widget::Generate.default_controls();
    assert!(generate.contains(&Control::Stop) && !generate.contains(&Control::Bars));
    for widget in Widget::all() {
        for &(control, preset) in widget.presets() {
            match (control.spec().input, preset) {
                (Input::Number { range, .. }, Preset::Number(v)) => {
                    assert!((range.min..=range.max).contains(&v), "{widget:?} {control:?}")
                }
                (Input::Text { .. }, Preset::Text(_)) => {}
                (Input::Choice { options, .. }, Preset::Text(t)) => {
                    assert!(options.contains(&t), "{widget:?} {control:?}: {t} is not an option")
                }
                _ => panic!("{widget:?}: preset of {control:?} is of the wrong kind"),
            }
        }
    }
}

#[test]
fn every_issue_value_gets_a_specific_notice() {
    let (v, n) = read("?top_k=2.5&seed=1.5&temperature=9");
    assert_eq!(number(&v, Control::TopK), Some(3.0));
    assert_eq!(number(&v, Control::Seed), Some(2.0));
    assert_eq!(number(&v, Control::Temperature), Some(3.0));
    assert!(n.iter().any(|n| n == "top_k takes whole numbers: “2.5” became 3"), "{n:?}");
    assert!(n.iter().any(|n| n == "seed takes whole numbers: “1.5” became 2"), "{n:?}");
    assert!(n.iter().any(|n| n == "temperature is kept within 0–3: “9” became 3"), "{n:?}");

    let (v, n) = read("?top_p=NaN&min_p=&no_repeat_ngram=-3&frequency_penalty=1e999");
    assert_eq!(number(&v, Control::TopP), None, "NaN is not taken");
    assert!(n.iter().any(|n| n.starts_with("top_p: “NaN” is not a finite number")), "{n:?}");
    assert!(n.iter().any(|n| n.starts_with("min_p: “” is not a number")), "{n:?}");
    assert_eq!(number(&v, Control::NoRepeatNgram), Some(0.0));
    assert!(n.iter().any(|n| n.starts_with("frequency_penalty: “1e999” is not a finite")), "{n:?}");

    let (v, n) = read("?temperature=0.5&temperature=2");
    assert_eq!(number(&v, Control::Temperature), Some(2.0), "the last one wins");
    assert!(n.iter().any(|n| n == "“temperature” is given 2 times: the last one is used"), "{n:?}");

    let mut n = Vec::new();
    assert!(!backend_cpu(&Query::parse("?backend=bogus"), &mut n));
    assert!(n[0].starts_with("backend: “bogus” is not a backend"), "{n:?}");
    assert!(backend_cpu(&Query::parse("?backend=cpu"), &mut Vec::new()));

    assert!(read_page(&Query::parse("?selftest=1")).selftest);
    assert!(!read_page(&Query::parse("?selftest=0")).selftest);
    let page = read_page(&Query::parse("?selftest=please"));
    assert!(!page.selftest);
    assert_eq!(page.notices, ["selftest: “please” is not 1 or 0; no self-test"]);

    assert_eq!(
        read_page(&Query::parse("?weights=f16")).weights,
        WeightsChoice::Exactly(Format::F16)
    );
    assert_eq!(
        read_page(&Query::parse("?weights=f32")).weights,
        WeightsChoice::Exactly(Format::F32)
    );
    assert_eq!(
        read_page(&Query::parse("?weights=int8")).weights,
        WeightsChoice::Exactly(Format::Int8)
    );
    assert_eq!(
        read_page(&Query::parse("?weights=int4")).weights,
        WeightsChoice::Exactly(Format::Int4)
    );
    let bf16 = read_page(&Query::parse("?weights=bf16")).weights;
    assert_eq!(bf16, WeightsChoice::Exactly(Format::Bf16));
    assert_eq!(read_page(&Query::parse("?x=1")).weights, WeightsChoice::Auto);
    let page = read_page(&Query::parse("?weights=int3"));
    assert_eq!(page.weights, WeightsChoice::Auto);
    assert_eq!(
        page.notices,
        [
            "weights: “int3” is not a weight format (auto, f32, f16, bf16, int8-tensor, int8, int4); using auto"
        ]
    );
}

#[test]
fn int8_activations_are_taken_with_int8_or_int4_weights_only_and_choose_the_cpu_engine() {
    let read = |q: &str| {
        let page = read_page(&Query::parse(q));
        (page.int8_activations, page.notices)
    };
    for weights in ["int8", "int8-tensor", "int4"] {
        let q = format!("?weights={weights}&activations=int8");
        assert_eq!(read(&q), (true, vec![]), "{q}");
        assert!(read_page(&Query::parse(&q)).force_cpu, "the GPU engine has no such kernels");
    }
    assert!(!read_page(&Query::parse("?weights=int8&activations=f32")).force_cpu);
    assert_eq!(read("?backend=cpu&weights=int8&activations=f32"), (false, vec![]));
    assert_eq!(read("?backend=cpu&weights=int8"), (false, vec![]));
    let said = |q: &str, why: &str| {
        let (taken, notices) = read(q);
        assert!(!taken, "{q}");
        assert_eq!(notices, [format!("activations: {why}; using f32 activations")], "{q}");
    };
    for weights in ["", "&weights=f16", "&weights=auto"] {
        said(
            &format!("?backend=cpu{weights}&activations=int8"),
            "“int8” — 8-bit activations multiply int8 or int4 weights: add weights=int8, int8-tensor or int4",
        );
    }
    said("?backend=cpu&weights=int8&activations=int4", "“int4” — not one of f32 or int8");
}

#[test]
fn compare_lists_say_when_they_are_clamped_or_the_wrong_length() {
    let q = Query::parse("?temperature=9,9,9,9,9&top_k=-7,2.5,abc");
    let mut n = Vec::new();
    let defaults = [[0.0, 0.0], [0.3, 0.0], [0.8, 10.0], [1.2, 100.0]];
    let cols = column_values(&q, [Control::Temperature, Control::TopK], defaults, &mut n);
    assert_eq!(cols, [[3.0, 0.0], [3.0, 3.0], [3.0, 10.0], [3.0, 100.0]]);
    for want in [
        "temperature: 5 values for 4 columns; the extra ones are ignored",
        "column 1: temperature is kept within 0–3: “9” became 3",
        "top_k: 3 values for 4 columns; the columns without one keep their default",
        "column 1: top_k is kept within 0–200: “-7” became 0",
        "column 2: top_k takes whole numbers: “2.5” became 3",
        "top_k (column 3): “abc” is not a number; using the default",
    ] {
        assert!(n.iter().any(|n| n == want), "missing {want:?} in {n:?}");
    }
}

/// `compare`'s lists are read with the page's other values, so their
/// notices show even when the model never loads (a `model=` that fails).
#[test]
fn compare_columns_are_read_with_the_page() {
    let page = read_page(&Query::parse("?widget=compare&model=%25&temperature=NaN&top_k=1,2,3,4"));
    assert_eq!(page.columns, [[0.0, 1.0], [0.3, 2.0], [0.8, 3.0], [1.2, 4.0]]);
    assert!(page.notices.iter().any(|n| n.starts_with("temperature: 1 values for 4 columns")));
    assert!(
        page.notices.iter().any(|n| n.starts_with("temperature (column 1): “NaN”")),
        "{:?}",
        page.notices
    );
    let other = read_page(&Query::parse("?widget=temperature&temperature=0.5"));
    assert_eq!(other.columns, Widget::COMPARE_COLUMNS);
}

#[test]
fn logits_and_labels_are_checked_with_clear_messages() {
    assert!(parse_logits("1e308,1").unwrap_err().contains("“1e308” is too large"));
    assert!(parse_logits("nan,1").unwrap_err().contains("“nan” is not a finite number"));
    assert_eq!(parse_logits("2,-inf,-Infinity").unwrap()[1..], [f32::NEG_INFINITY; 2]);
    assert!(parse_logits("-inf").unwrap_err().contains("at least one must be a number"));
    let mut n = Vec::new();
    let sets = parse_sets("3,2,1", Some("a,b"), &mut n).unwrap();
    assert_eq!(sets.labels, vec![vec!["a".to_string(), "b".to_string()]]);
    assert_eq!(n, ["labels: set 1 has 2 labels for 3 logits; the rest are shown as their index"]);
}

#[test]
fn routes_and_controls_lists_read_as_documented() {
    let mut n = Vec::new();
    let r = Route::from_query(&Query::parse("?widget=nope&embed=maybe"), &mut n);
    assert_eq!((r.widget, r.embed), (None, false));
    assert!(n[0].starts_with("widget: no widget called “nope”"), "{n:?}");
    assert!(n[1].starts_with("embed: “maybe” is not 1 or 0"), "{n:?}");
    let mut n = Vec::new();
    let q = Query::parse("?widget=pipeline&controls=top_k:locked,stop,bogus,frequency_penalty");
    let r = Route::from_query(&q, &mut n);
    assert_eq!(r.widget, Some(Widget::Pipeline));
    let shown: Vec<_> = r.shown.controls.clone();
    assert_eq!(
        shown,
        [(Control::TopK, true), (Control::FrequencyPenalty, false), (Control::Stop, false)]
    );
    assert_eq!(r.shown.to_param(), "top_k:locked,frequency_penalty,stop");
    assert_eq!(n, ["controls: no control called “bogus”"]);
}

/// A seeded stream of hostile values (splitmix64: no dependency, same on
/// every platform).
struct Hostile(u64);

impl Hostile {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn value(&mut self) -> String {
        let atoms = [
            "1e308",
            "-1e308",
            "NaN",
            "inf",
            "-inf",
            "",
            "0",
            "-0",
            "2.5",
            "1.5",
            "99999999999",
            "18446744073709551616",
            "0x10",
            "1,2,3,4,5",
            ";",
            "%00",
            "%ZZ",
            "%E2%82%AC",
            "🙂",
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "blob:http://localhost/x",
            "DATA:text/html,<script>alert(1)</script>",
            "<script>alert(1)</script>",
            "\"'><img src=x onerror=alert(1)>",
            "top_k:locked",
            "none",
            " 3 ",
            "+1",
            "1e-400",
            "-",
            ".",
            "1..2",
            "\u{202e}rtl",
        ];
        match self.next() % 10 {
            0 => "9".repeat(100_000),
            1 => "a".repeat(20_000) + "🙂",
            _ => self.pick(&atoms).to_string(),
        }
    }
}

/// 500 generated hostile query strings over every parameter: no panic, every
/// notice short (a 100 KB value is never echoed whole), values in range.
#[test]
fn hostile_query_strings_never_panic_and_are_not_echoed_whole() {
    let mut h = Hostile(2026);
    let mut names: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
    names.extend(["widget", "embed", "controls", "backend", "logits", "labels", "model", "x"]);
    for _ in 0..500 {
        let mut search = String::from("?");
        for _ in 0..(1 + h.next() % 8) {
            let name = h.pick(&names);
            let value = h.value();
            let encoded: String = form_value(&value);
            search += &format!("{name}={encoded}&");
        }
        let q = Query::parse(&search);
        let Page { values, mut notices, .. } = read_page(&q);
        column_values(&q, Widget::COMPARE_COLUMN_CONTROLS, [[0.0; 2]; 4], &mut notices);
        if let Some(raw) = q.get("logits") {
            let _ = parse_sets(raw, q.get("labels"), &mut notices).map_err(|e| notices.push(e));
        }
        if let Some(raw) = q.get("model") {
            match decode_lab_contract::model_base(raw) {
                // Only http(s) or relative addresses load: no javascript:, data:, blob: in any case.
                Ok(base) => {
                    let scheme = decode_lab_contract::model_ref::scheme(&base);
                    assert!(
                        scheme.is_none_or(|s| s == "http" || s == "https"),
                        "model= {raw:?} gave {base:?}"
                    );
                }
                Err(why) => notices.push(why),
            }
        }
        for n in &notices {
            assert!(n.chars().count() < 400, "notice too long ({} chars)", n.chars().count());
        }
        for (control, val) in values {
            if let (Input::Number { range, .. }, Val::Number(v)) = (control.spec().input, val) {
                assert!((range.min..=range.max).contains(&v), "{control:?} = {v}");
            }
        }
    }
}

/// `value` percent-encoded as a browser's URLSearchParams writes it.
fn form_value(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                (b as char).to_string()
            }
            b' ' => "+".to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// EMBEDDING.md documents every control of the table with its range: the
/// page for course authors cannot drift from the code.
#[test]
fn embedding_md_lists_every_control_with_its_range() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../EMBEDDING.md"))
        .expect("EMBEDDING.md at the repository root");
    let (_, doc) = doc.split_once("### Parameters").expect("a Parameters section");
    for spec in SPECS {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", spec.name)))
            .unwrap_or_else(|| panic!("EMBEDDING.md has no row for `{}`", spec.name));
        if let Input::Number { range, .. } = spec.input {
            let want = format!("{} – {}", range.min, range.max);
            assert!(row.contains(&want), "the row of `{}` should say {want}: {row}", spec.name);
        }
    }
    // Every control `controls=` can show: the engine's are chosen in the link or the Model menu.
    let controls_row = doc.lines().find(|l| l.starts_with("| `controls` |")).unwrap();
    for spec in SPECS.iter().filter(|s| !matches!(s.drives, Drives::Engine)) {
        assert!(controls_row.contains(spec.name), "`controls=` row lacks {}", spec.name);
    }
}

/// EMBEDDING.md's widget table has a row for every widget of the table,
/// saying whether it runs on `logits=` and which controls it shows by
/// default, as the table does.
#[test]
fn embedding_md_documents_every_widget() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../EMBEDDING.md"))
        .expect("EMBEDDING.md at the repository root");
    let (_, doc) = doc.split_once("### Widgets").expect("a Widgets section");
    let (doc, _) = doc.split_once("### Parameters").expect("a Parameters section after it");
    let rows: Vec<&str> =
        doc.lines().filter(|l| l.starts_with("| `") && !l.starts_with("| `widget=`")).collect();
    assert_eq!(rows.len(), Widget::all().count(), "one row per widget, no other");
    for widget in Widget::all() {
        let row = rows
            .iter()
            .find(|l| l.starts_with(&format!("| `{}` |", widget.name())))
            .unwrap_or_else(|| panic!("EMBEDDING.md has no row for `{}`", widget.name()));
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let on_logits = cells[cells.len() - 2];
        assert_eq!(on_logits.starts_with("yes"), !widget.needs_model(), "{row}");
        let shown: Vec<&str> = widget.default_controls().iter().map(|c| c.spec().name).collect();
        assert_eq!(cells[cells.len() - 1], shown.join(", "), "`{}`'s controls", widget.name());
    }
}

/// `kernels=` is read when the page loads (a choice of the table, with its
/// notice when it is none of the names), never shown among the controls.
#[test]
fn kernels_is_an_engine_choice_read_at_load() {
    use decode_lab_contract::KernelsChoice;
    use engine::kernels::{Profile, Split};
    let page = |q: &str| read_page(&Query::parse(q));
    assert_eq!(page("").kernels, KernelsChoice::Auto);
    assert_eq!(page("kernels=gpu").kernels, KernelsChoice::Gpu);
    let gpu_8 = KernelsChoice::Exactly(Profile::Gpu(Split { wide: 8 }));
    assert_eq!(page("kernels=gpu-8").kernels, gpu_8);
    assert_eq!(page("kernels=cpu").kernels, KernelsChoice::Exactly(Profile::Cpu));
    let bad = page("kernels=fast");
    assert_eq!(bad.kernels, KernelsChoice::Auto);
    assert!(
        bad.notices.iter().any(|n| n.contains("kernels") && n.contains("auto, cpu, gpu")),
        "{:?}",
        bad.notices
    );
    let shown = page("controls=temperature,kernels");
    assert_eq!(shown.route.shown.controls.len(), 1);
    assert!(shown.notices.iter().any(|n| n.contains("Model menu")), "{:?}", shown.notices);
    assert!(!Control::playground().any(|c| c == Control::Kernels));
}

/// A choice control takes only its options (trimmed); anything else keeps the
/// default with a notice naming the options. Lesson controls stay out of the
/// playground and of the widgets that show "every control".
#[test]
fn choice_controls_take_only_their_options() {
    let (values, notices) = read("?widget=quantization&variant_a=%20bf16%20&variant_b=int9");
    assert!(values.contains(&(Control::VariantA, Val::Text("bf16".into()))));
    assert!(!values.iter().any(|(c, _)| *c == Control::VariantB));
    assert_eq!(
        notices,
        ["variant_b: “int9” is not one of f32, f16, bf16, int8-tensor, int8, int4; using the default"]
    );
    let lesson = [Control::VariantA, Control::VariantB, Control::HeldOutTokens, Control::Tensor];
    for widget in [None, Some(Widget::Pipeline), Some(Widget::Generate)] {
        let shown = match widget {
            None => Shown::all().controls,
            Some(w) => w.default_controls().into_iter().map(|c| (c, false)).collect(),
        };
        assert!(shown.iter().all(|(c, _)| !lesson.contains(c)), "{widget:?}");
    }
    assert!(Widget::Quantization.default_controls().contains(&Control::VariantB));
}

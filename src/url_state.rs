//! State from and to the query string: every control can be set by URL, so a
//! link reproduces a view (and, with its seed, a text). Values out of range
//! are clamped, unreadable ones ignored — each with a notice the page shows.
//! The same table writes the state back: the address bar follows the controls
//! and "Copy embed code" links to exactly what is on screen.

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::controls::{range, Range};
use crate::driver::Controls;
use crate::loader::debounced;
use crate::route::Route;

/// One numeric URL parameter and the control it reads and sets.
struct Param {
    name: &'static str,
    range: Range,
    control: fn(&Controls) -> RwSignal<f64>,
}

impl Param {
    /// Whole-number controls (step 1) take whole numbers.
    fn set(&self, c: &Controls, v: f64) {
        (self.control)(c).set(if self.range.step == 1.0 { v.round() } else { v });
    }
}

const PARAMS: [Param; 8] = [
    Param { name: "temperature", range: range::TEMPERATURE, control: |c| c.temperature },
    Param { name: "top_k", range: range::TOP_K, control: |c| c.top_k },
    Param { name: "top_p", range: range::PROBABILITY, control: |c| c.top_p },
    Param { name: "min_p", range: range::PROBABILITY, control: |c| c.min_p },
    Param {
        name: "repetition_penalty",
        range: range::REPETITION_PENALTY,
        control: |c| c.repetition_penalty,
    },
    Param { name: "seed", range: range::SEED, control: |c| c.seed },
    Param { name: "max_tokens", range: range::MAX_TOKENS, control: |c| c.max_tokens },
    Param { name: "bars", range: range::BARS, control: |c| c.bars },
];

thread_local! {
    /// The query string the page was opened with. Read once: the address bar
    /// is rewritten as controls move, and a widget mounting later (after the
    /// model loaded) must still see what the link asked for.
    static OPENED_WITH: String = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
}

/// The query parameter `name` of the URL the page was opened with.
pub fn query(name: &str) -> Option<String> {
    OPENED_WITH.with(|search| web_sys::UrlSearchParams::new_with_str(search).ok()?.get(name))
}

/// Sets every control named in the URL except those in `skip` (a widget that
/// reads them itself); returns a notice per value not taken as given.
pub fn apply(controls: &Controls, skip: &[&str]) -> Vec<String> {
    let mut notices = Vec::new();
    for p in PARAMS.iter().filter(|p| !skip.contains(&p.name)) {
        let Some(raw) = query(p.name) else { continue };
        match p.range.read(&raw) {
            Ok(v) => {
                if raw.trim().parse::<f64>().ok() != Some(v) {
                    notices.push(format!(
                        "{}={raw} is outside {}–{}: using {v}",
                        p.name, p.range.min, p.range.max
                    ));
                }
                p.set(controls, v);
            }
            Err(e) => notices.push(format!("{}: {e}; using the default", p.name)),
        }
    }
    if let Some(stop) = query("stop") {
        controls.stop.set(stop);
    }
    notices
}

/// Everything a link must carry to reproduce the page.
#[derive(Clone, Copy)]
pub struct Share {
    pub route: StoredValue<Route>,
    pub controls: Controls,
    pub prompt: RwSignal<String>,
    /// `logits=` / `labels=` exactly as given (custom-logits mode).
    pub logits: StoredValue<Option<(String, Option<String>)>>,
    /// Parameters a widget writes itself (the compare widget's columns).
    pub extra: RwSignal<Vec<(&'static str, String)>>,
}

impl Share {
    /// The query string (with `?`) for this state; `embed` sets `embed=1`.
    pub fn query(&self, embed: bool) -> String {
        let Ok(params) = web_sys::UrlSearchParams::new() else { return String::new() };
        let route = self.route.get_value();
        if let Some(w) = route.widget {
            params.append("widget", w.name());
        }
        match self.logits.get_value() {
            Some((logits, labels)) => {
                params.append("logits", &logits);
                if let Some(labels) = labels {
                    params.append("labels", &labels);
                }
            }
            None => params.append("prompt", &self.prompt.get()),
        }
        let extra = self.extra.get();
        for p in PARAMS.iter().filter(|p| !extra.iter().any(|(n, _)| *n == p.name)) {
            params.append(p.name, &(p.control)(&self.controls).get().to_string());
        }
        for (name, value) in &extra {
            params.append(name, value);
        }
        let stop = self.controls.stop.get();
        if !stop.is_empty() {
            params.append("stop", &stop);
        }
        for name in ["model", "backend"] {
            if let Some(v) = query(name) {
                params.append(name, &v);
            }
        }
        if route.shown.from_url {
            params.append("controls", &route.shown.to_param());
        }
        if embed {
            params.append("embed", "1");
        }
        format!("?{}", String::from(params.to_string()))
    }

    /// This page's address (no query) followed by `query`.
    pub fn url(&self, embed: bool) -> String {
        let location = web_sys::window().map(|w| w.location());
        let base =
            location.and_then(|l| Some(l.origin().ok()? + &l.pathname().ok()?)).unwrap_or_default();
        base + &self.query(embed)
    }

    /// Keeps the address bar on the current state (debounced: browsers
    /// throttle `replaceState` while a slider is dragged).
    pub fn follow_in_address_bar(self) {
        let write = debounced(300, move || {
            let q = untrack(|| self.query(self.route.with_value(|r| r.embed)));
            if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&q));
            }
        });
        Effect::new(move |_| {
            self.query(false); // tracks every part of the state
            write();
        });
    }
}

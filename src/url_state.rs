//! State from and to the query string: every control can be set by URL, so a
//! link reproduces a view (and, with its seed, a text). Values out of range
//! are clamped, unreadable ones ignored — each with a notice the page shows.
//! The same table writes the state back: the address bar follows the controls
//! and "Copy embed code" links to exactly what is on screen.

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::loader::debounced;
use crate::query::query;
use crate::registry::{Control, Controls, Input, Value, SPECS};
use crate::route::{Preset, Route};

/// Sets `presets` (a widget's starting values), then every control the URL
/// names except those in `skip` (a widget that reads them itself); returns a
/// notice per value not taken as given.
pub fn apply(controls: &Controls, presets: &[(Control, Preset)], skip: &[Control]) -> Vec<String> {
    for &(control, preset) in presets {
        match (controls.value(control), preset) {
            (Value::Number(s), Preset::Number(v)) => s.set(v),
            (Value::Text(s), Preset::Text(t)) => s.set(t.to_string()),
            _ => {} // a preset of the wrong kind is caught by the route's test
        }
    }
    let mut notices = Vec::new();
    for spec in SPECS.iter().filter(|s| !skip.contains(&s.control)) {
        let Some(raw) = query(spec.name) else { continue };
        match controls.value(spec.control) {
            Value::Text(s) => s.set(raw),
            Value::Number(s) => match spec.read(&raw) {
                Ok(taken) => {
                    if taken.adjusted {
                        notices.push(spec.adjustment(&raw, taken));
                    }
                    s.set(taken.value);
                }
                Err(e) => notices.push(format!("{}: {e}; using the default", spec.name)),
            },
        }
    }
    notices
}

/// A notice for each parameter the URL gives more than once (the last wins).
pub fn repeated_params() -> Vec<String> {
    let Some(search) = web_sys::window().and_then(|w| w.location().search().ok()) else {
        return Vec::new();
    };
    let mut seen: Vec<(String, usize)> = Vec::new();
    for pair in search.trim_start_matches('?').split('&').filter(|p| !p.is_empty()) {
        let name = pair.split('=').next().unwrap_or_default().to_string();
        match seen.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => seen.push((name, 1)),
        }
    }
    seen.into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(name, count)| {
            format!("{} is given {count} times: the last one is used", crate::registry::echo(&name))
        })
        .collect()
}

/// Everything a link must carry to reproduce the page.
#[derive(Clone, Copy)]
pub struct Share {
    pub route: StoredValue<Route>,
    pub controls: Controls,
    /// `logits=` / `labels=` exactly as given (custom-logits mode).
    pub logits: StoredValue<Option<(String, Option<String>)>>,
    /// Parameters a widget writes itself (the compare widget's columns).
    pub extra: RwSignal<Vec<(Control, String)>>,
}

impl Share {
    /// The query string (with `?`) for this state; `embed` sets `embed=1`.
    pub fn query(&self, embed: bool) -> String {
        let Ok(params) = web_sys::UrlSearchParams::new() else { return String::new() };
        let route = self.route.get_value();
        if let Some(w) = route.widget {
            params.append("widget", w.name());
        }
        let logits = self.logits.get_value();
        if let Some((logits, labels)) = &logits {
            params.append("logits", logits);
            if let Some(labels) = labels {
                params.append("labels", labels);
            }
        }
        let extra = self.extra.get();
        for spec in SPECS {
            if let Some((_, value)) = extra.iter().find(|(c, _)| *c == spec.control) {
                params.append(spec.name, value);
                continue;
            }
            match (self.controls.value(spec.control), spec.input) {
                (Value::Number(v), _) => params.append(spec.name, &v.get().to_string()),
                // The prompt means nothing over an author's logits.
                (Value::Text(_), _) if spec.control == Control::Prompt && logits.is_some() => {}
                (Value::Text(t), Input::Text { default }) => {
                    let t = t.get();
                    if !t.is_empty() || !default.is_empty() {
                        params.append(spec.name, &t);
                    }
                }
                (Value::Text(_), Input::Number { .. }) => {}
            }
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

//! State from and to the query string: every control can be set by URL, so a
//! link reproduces a view (and, with its seed, a text). Values out of range
//! are clamped, unreadable ones ignored — each with a notice the page shows.
//! The same table writes the state back: the address bar follows the controls
//! and "Copy embed code" links to exactly what is on screen.

use contract::{Control, Drives, Input, Route, Val, SPECS};
use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::browser::debounced;
use crate::query::query;
use crate::registry::{Controls, Value};

/// Sets the controls to the values the page read from its URL (the widget's
/// presets, then the link's own).
pub fn apply(controls: &Controls, values: Vec<(Control, Val)>) {
    for (control, val) in values {
        match (controls.value(control), val) {
            (Value::Number(s), Val::Number(v)) => s.set(v),
            (Value::Text(s), Val::Text(t)) => s.set(t),
            // The table gives each control one kind: the contract's tests check presets.
            _ => {}
        }
    }
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
    /// Parameters under a widget's own names (the quiz's `qN.` questions).
    pub params: RwSignal<Vec<(String, String)>>,
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
            match self.controls.value(spec.control) {
                // A lesson's, the engine's or chat's own control travels only when it was set.
                _ if matches!(spec.drives, Drives::Lesson | Drives::Engine | Drives::Chat) => {
                    if let Some(v) = self.lesson_value(spec) {
                        params.append(spec.name, &v);
                    }
                }
                Value::Number(v) => params.append(spec.name, &v.get().to_string()),
                // The prompt means nothing over an author's logits.
                Value::Text(_) if spec.control == Control::Prompt && logits.is_some() => {}
                // A text control with a default (the prompt) is always written,
                // so an empty one stays empty; others only when set.
                Value::Text(t) => {
                    let t = t.get();
                    let has_default =
                        matches!(spec.input, Input::Text { default } if !default.is_empty());
                    if !t.is_empty() || has_default {
                        params.append(spec.name, &t);
                    }
                }
            }
        }
        for (name, value) in self.params.get() {
            params.append(&name, &value);
        }
        for name in ["model", "backend", "weights", "activations"] {
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

    /// A lesson control's value unless it is at its default.
    fn lesson_value(&self, spec: &contract::Spec) -> Option<String> {
        match (self.controls.value(spec.control), spec.input) {
            (Value::Number(v), Input::Number { default, .. }) => {
                let v = v.get();
                (v != default).then(|| v.to_string())
            }
            (Value::Text(t), Input::Text { default } | Input::Choice { default, .. }) => {
                let t = t.get();
                (t != default).then_some(t)
            }
            _ => None,
        }
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

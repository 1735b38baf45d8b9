//! State from the query string: every control can be set by URL, so a link
//! reproduces a view (and, with its seed, a text). Values out of range are
//! clamped, unreadable ones ignored — each with a notice the page shows.

use leptos::prelude::*;

use crate::controls::{range, Range};
use crate::driver::Controls;

/// One numeric URL parameter and the control it sets.
struct Param {
    name: &'static str,
    range: Range,
    set: fn(&Controls, f64),
}

const PARAMS: [Param; 8] = [
    Param { name: "temperature", range: range::TEMPERATURE, set: |c, v| c.temperature.set(v) },
    Param { name: "top_k", range: range::TOP_K, set: |c, v| c.top_k.set(v.round()) },
    Param { name: "top_p", range: range::PROBABILITY, set: |c, v| c.top_p.set(v) },
    Param { name: "min_p", range: range::PROBABILITY, set: |c, v| c.min_p.set(v) },
    Param {
        name: "repetition_penalty",
        range: range::REPETITION_PENALTY,
        set: |c, v| c.repetition_penalty.set(v),
    },
    Param { name: "seed", range: range::SEED, set: |c, v| c.seed.set(v.round()) },
    Param { name: "max_tokens", range: range::MAX_TOKENS, set: |c, v| c.max_tokens.set(v.round()) },
    Param { name: "bars", range: range::BARS, set: |c, v| c.bars.set(v.round()) },
];

/// The page's query parameter `name`, if present.
pub fn query(name: &str) -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    web_sys::UrlSearchParams::new_with_str(&search).ok()?.get(name)
}

/// Sets every control named in the URL; returns a notice per value that was
/// not taken as given.
pub fn apply(controls: &Controls) -> Vec<String> {
    let mut notices = Vec::new();
    for p in &PARAMS {
        let Some(raw) = query(p.name) else { continue };
        match p.range.read(&raw) {
            Ok(v) => {
                if raw.trim().parse::<f64>().ok() != Some(v) {
                    notices.push(format!(
                        "{}={raw} is outside {}–{}: using {v}",
                        p.name, p.range.min, p.range.max
                    ));
                }
                (p.set)(controls, v);
            }
            Err(e) => notices.push(format!("{}: {e}; using the default", p.name)),
        }
    }
    notices
}

//! `decode-lab widgets`: the widget table (contract::WIDGETS) for course
//! authors — each `widget=` name, whether it runs on `logits=`, the controls
//! it shows by default and its title — and, with `--json`, for the e2e
//! tests, which read their widget lists from it instead of keeping copies.

use std::fmt::Write as _;

use contract::{Action, Widget};
use engine::Result;

/// `widgets`' flags.
#[derive(clap::Args)]
pub struct Args {
    /// One JSON array instead of the table.
    #[arg(long)]
    json: bool,
}

/// Prints the table (or one JSON object per widget, in an array).
pub fn run(a: Args) -> Result<()> {
    let json = a.json;
    let rows = Widget::all().map(|w| {
        let controls: Vec<&str> = w.default_controls().iter().map(|c| c.spec().name).collect();
        (w, controls)
    });
    let mut out = String::new();
    if json {
        let list: Vec<serde_json::Value> = rows
            .map(|(w, controls)| {
                serde_json::json!({
                    "name": w.name(),
                    "title": w.title(),
                    "needs_model": w.needs_model(),
                    "controls": controls,
                    "action": action_json(w.action()),
                })
            })
            .collect();
        out = serde_json::Value::Array(list).to_string();
    } else {
        for (w, controls) in rows {
            let logits = if w.needs_model() { "model only" } else { "logits= too" };
            let _ = writeln!(out, "{:<15} {:<12} {}", w.name(), logits, w.title());
            let _ = writeln!(out, "{:<15} controls: {}", "", controls.join(", "));
        }
    }
    println!("{}", out.trim_end());
    Ok(())
}

/// A widget's main action for the e2e tests: `{"set": testid, "to": value}`
/// or `{"press": testid, "fill": [testid, text] | null}`.
fn action_json(action: Action) -> serde_json::Value {
    match action {
        Action::Set(control, to) => serde_json::json!({ "set": control.spec().testid(), "to": to }),
        Action::Press { button, fill } => serde_json::json!({ "press": button, "fill": fill }),
    }
}

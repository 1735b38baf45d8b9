//! Custom-logits mode (`?logits=3,2,1,0.5,0.1&labels=the,a,an,this,some`): the
//! distribution panel and its controls on numbers an author gives, with no
//! model download — a textbook example, exactly.

use leptos::prelude::*;

use crate::driver::Controls;
use crate::route::{Control, Shown, Widget};
use crate::widgets::{Logits, Source, WidgetView};

/// The most logits a URL may carry (a GPT-2-sized vocabulary fits).
const MAX_LOGITS: usize = 100_000;

/// Parses `3,2,1,-inf`: finite numbers or `-inf` (a banned token).
pub fn parse_logits(raw: &str) -> Result<Vec<f32>, String> {
    let logits = raw
        .split(',')
        .map(|s| match s.trim() {
            "-inf" | "-Infinity" => Ok(f32::NEG_INFINITY),
            t => t
                .parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("logits: “{t}” is not a number")),
        })
        .collect::<Result<Vec<f32>, String>>()?;
    if logits.len() > MAX_LOGITS {
        return Err(format!("logits: {} values, at most {MAX_LOGITS}", logits.len()));
    }
    if logits.iter().all(|&l| l == f32::NEG_INFINITY) {
        return Err("logits: at least one must be a number (not -inf)".into());
    }
    Ok(logits)
}

/// Parses `logits=` (one set, or two separated by `;` for the top-p switch)
/// and `labels=` (the same shape); labels that do not fit are dropped with a
/// notice.
pub fn parse_sets(
    raw: &str,
    labels: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<Logits, String> {
    let mut sets = raw.split(';').map(parse_logits).collect::<Result<Vec<_>, _>>()?;
    if sets.len() > 2 {
        notices.push(format!("logits: {} sets given, the first two are used", sets.len()));
        sets.truncate(2);
    }
    let mut label_sets: Vec<Vec<String>> = labels
        .map(|l| l.split(';').map(|s| s.split(',').map(str::to_string).collect()).collect())
        .unwrap_or_default();
    label_sets.resize(sets.len(), Vec::new());
    for (i, (labels, logits)) in label_sets.iter_mut().zip(&sets).enumerate() {
        if labels.len() > logits.len() {
            notices.push(format!(
                "labels: set {} has {} labels for {} logits; the extra ones are ignored",
                i + 1,
                labels.len(),
                logits.len()
            ));
            labels.truncate(logits.len());
        }
    }
    Ok(Logits::new(sets, label_sets))
}

/// The panel over the author's logits, with the controls that apply to them.
#[component]
pub fn CustomLogits(logits: Logits, controls: Controls, shown: Shown) -> impl IntoView {
    let shown = if shown.from_url {
        shown
    } else {
        let c = [Control::Temperature, Control::TopK, Control::TopP, Control::MinP, Control::Bars];
        Shown { controls: c.iter().map(|&c| (c, false)).collect(), from_url: false }
    };
    view! {
        <div class="custom-logits">
            <p class="note">"These are the logits given in the link, not a model's: every number below is exact for them."</p>
            <WidgetView widget=Widget::Temperature source=Source::Logits(logits) controls=controls shown=shown/>
        </div>
    }
}

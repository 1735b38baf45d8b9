//! Custom-logits mode (`?logits=3,2,1,0.5,0.1&labels=the,a,an,this,some`): the
//! distribution panel and its controls on numbers an author gives, with no
//! model download — a textbook example, exactly.

use std::sync::Arc;

use leptos::prelude::*;

use crate::controls::{range, NumberControl};
use crate::distribution::{DistributionPanel, StepInput};
use crate::driver::Controls;

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

/// The panel over the author's logits; `labels` name the tokens (ids otherwise).
#[component]
pub fn CustomLogits(logits: Vec<f32>, labels: Vec<String>, controls: Controls) -> impl IntoView {
    let c = controls;
    let input = StepInput { logits: Arc::new(logits), history: Arc::new(Vec::new()) };
    let input = Signal::derive(move || Some(input.clone()));
    let settings = Signal::derive(move || c.settings());
    let bars = Signal::derive(move || c.bars.get() as usize);
    let labels = Arc::new(labels);
    let token_text = Callback::new(move |id: u32| {
        labels.get(id as usize).cloned().unwrap_or_else(|| id.to_string())
    });
    view! {
        <div class="custom-logits">
            <p class="note">"These are the logits given in the link, not a model's: every number below is exact for them."</p>
            <section class="controls" aria-label="sampling controls">
                <NumberControl label="Temperature" testid="temperature" value=c.temperature
                    range=range::TEMPERATURE help="0 = greedy"/>
                <NumberControl label="Top-k" testid="top-k" value=c.top_k range=range::TOP_K/>
                <NumberControl label="Top-p" testid="top-p" value=c.top_p range=range::PROBABILITY/>
                <NumberControl label="Min-p" testid="min-p" value=c.min_p range=range::PROBABILITY/>
                <NumberControl label="Bars shown" testid="bars" value=c.bars range=range::BARS/>
            </section>
            <section class="panel">
                <DistributionPanel input=input settings=settings bars=bars token_text=token_text/>
            </section>
        </div>
    }
}

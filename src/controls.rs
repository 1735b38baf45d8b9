//! Number controls: a slider and a number box bound to one value, with a label
//! and keyboard support (the browser's own for both inputs). Out-of-range or
//! unreadable input is clamped or ignored with a visible notice, never a panic.

use leptos::prelude::*;

use crate::driver::Controls;
use crate::route::{Control, Shown};

/// The range and step of one control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub step: f64,
}

impl Range {
    /// `raw` parsed and clamped; `Err` says why it was not taken as typed.
    pub fn read(&self, raw: &str) -> Result<f64, String> {
        let v: f64 = raw.trim().parse().map_err(|_| format!("“{raw}” is not a number"))?;
        if !v.is_finite() {
            return Err(format!("“{raw}” is not a finite number"));
        }
        Ok(v.clamp(self.min, self.max))
    }
}

/// Every control's range, defined once: the controls, the URL reader and the
/// custom-logits view all clamp to the same bounds.
pub mod range {
    use super::Range;
    pub const TEMPERATURE: Range = Range { min: 0.0, max: 3.0, step: 0.05 };
    pub const TOP_K: Range = Range { min: 0.0, max: 200.0, step: 1.0 };
    /// top-p and min-p.
    pub const PROBABILITY: Range = Range { min: 0.0, max: 1.0, step: 0.01 };
    pub const REPETITION_PENALTY: Range = Range { min: 0.5, max: 2.0, step: 0.05 };
    pub const SEED: Range = Range { min: 0.0, max: 4294967295.0, step: 1.0 };
    pub const MAX_TOKENS: Range = Range { min: 1.0, max: 1000.0, step: 1.0 };
    pub const BARS: Range = Range { min: 1.0, max: 100.0, step: 1.0 };
}

/// A labelled slider + number box. `testid` goes on the number box (it takes
/// any value; the slider snaps to its step).
#[component]
pub fn NumberControl(
    label: &'static str,
    testid: &'static str,
    range: Range,
    value: RwSignal<f64>,
    #[prop(optional)] help: &'static str,
    /// Shown but read-only (`controls=NAME:locked`).
    #[prop(optional)]
    locked: bool,
) -> impl IntoView {
    let notice = RwSignal::new(None::<String>);
    // The number box shows what was typed ("0." mid-edit), not a re-rendering
    // of the value; it follows the value only when the value moved elsewhere.
    let text = RwSignal::new(value.get_untracked().to_string());
    Effect::new(move |_| {
        let v = value.get();
        if text.with_untracked(|t| t.trim().parse::<f64>().ok()) != Some(v) {
            text.set(v.to_string());
        }
    });
    let take = move |raw: String| match range.read(&raw) {
        Ok(v) => {
            let typed: Option<f64> = raw.trim().parse().ok();
            notice.set(
                (typed != Some(v))
                    .then(|| format!("{label} kept within {}–{}", range.min, range.max)),
            );
            value.set(v);
        }
        Err(e) => notice.set(Some(e)),
    };
    // Unique even when one control appears several times (compare's columns).
    static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let id = format!("control-{testid}-{n}");
    view! {
        <div class="control" class:locked=locked title=help>
            <label for=id.clone()>{label}</label>
            <input
                type="range"
                aria-label=label
                min=range.min.to_string()
                max=range.max.to_string()
                step=range.step.to_string()
                disabled=locked
                prop:value=move || value.get().to_string()
                on:input=move |ev| take(event_target_value(&ev))
            />
            <input
                id=id
                type="number"
                data-testid=testid
                min=range.min.to_string()
                max=range.max.to_string()
                step=range.step.to_string()
                disabled=locked
                prop:value=move || text.get()
                on:input=move |ev| {
                    let raw = event_target_value(&ev);
                    text.set(raw.clone());
                    take(raw)
                }
            />
            {move || notice.get().map(|n| view! { <span class="notice" role="status">{n}</span> })}
        </div>
    }
}

/// The controls `shown` names, in the page's order (the prompt has its own
/// editor and is skipped here).
#[component]
pub fn ControlsPanel(controls: Controls, shown: Shown) -> impl IntoView {
    let c = controls;
    let views = shown
        .controls
        .iter()
        .map(|&(control, locked)| match control {
            Control::Prompt => ().into_any(),
            Control::Temperature => view! { <NumberControl label="Temperature" testid="temperature" value=c.temperature
                range=range::TEMPERATURE locked=locked help="0 = greedy (always the most likely token)"/> }.into_any(),
            Control::TopK => view! { <NumberControl label="Top-k" testid="top-k" value=c.top_k
                range=range::TOP_K locked=locked help="keep the k most likely tokens; 0 = off"/> }.into_any(),
            Control::TopP => view! { <NumberControl label="Top-p" testid="top-p" value=c.top_p
                range=range::PROBABILITY locked=locked help="keep the smallest set whose mass reaches p; 1 = off"/> }.into_any(),
            Control::MinP => view! { <NumberControl label="Min-p" testid="min-p" value=c.min_p
                range=range::PROBABILITY locked=locked help="keep tokens with p ≥ min-p · p(top token); 0 = off"/> }.into_any(),
            Control::RepetitionPenalty => view! { <NumberControl label="Repetition penalty" testid="repetition-penalty"
                value=c.repetition_penalty range=range::REPETITION_PENALTY locked=locked
                help="divides the logits of tokens already seen; 1 = off"/> }.into_any(),
            Control::MaxTokens => view! { <NumberControl label="Max new tokens" testid="max-tokens" value=c.max_tokens
                range=range::MAX_TOKENS locked=locked/> }.into_any(),
            Control::Seed => view! {
                <div class="seed-row">
                    <NumberControl label="Seed" testid="seed" value=c.seed range=range::SEED locked=locked
                        help="same seed + same settings = same text"/>
                    {(!locked).then(|| view! {
                        <button data-testid="new-seed"
                            on:click=move |_| c.seed.set((js_sys::Math::random() * 4294967295.0).floor())>"new seed"</button>
                    })}
                </div>
            }.into_any(),
            Control::Bars => view! { <NumberControl label="Bars shown" testid="bars" value=c.bars range=range::BARS
                locked=locked/> }.into_any(),
            Control::Stop => view! {
                <div class="control" class:locked=locked>
                    <label for="stops">"Stop strings (one per line)"</label>
                    <textarea id="stops" data-testid="stop-strings" rows="2" disabled=locked
                        prop:value=move || c.stop.get() on:input=move |ev| c.stop.set(event_target_value(&ev))></textarea>
                </div>
            }.into_any(),
        })
        .collect_view();
    view! { <section class="controls" aria-label="sampling controls">{views}</section> }
}

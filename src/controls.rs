//! Number controls: a slider and a number box bound to one value, with a label
//! and keyboard support (the browser's own for both inputs). Out-of-range or
//! unreadable input is clamped or ignored with a visible notice, never a panic.

use contract::{Control, Input, Shown, Spec};
use leptos::prelude::*;

use crate::registry::{Controls, Value};

/// The slider + number box of the number control `spec`. Its test id (on
/// the number box, which takes any value; the slider snaps to its step) is
/// `testid_prefix` + the spec's.
#[component]
pub fn NumberControl(
    spec: &'static Spec,
    value: RwSignal<f64>,
    /// Shown but read-only (`controls=NAME:locked`).
    #[prop(optional)]
    locked: bool,
    /// Tells several copies of one control apart (compare's columns).
    #[prop(optional)]
    testid_prefix: &'static str,
) -> impl IntoView {
    let Input::Number { range, .. } = spec.input else {
        return ().into_any();
    };
    let (label, help) = (spec.label, spec.help);
    let testid = format!("{testid_prefix}{}", spec.testid());
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
    let take = move |raw: String| match spec.read(&raw) {
        Ok(taken) => {
            notice.set(taken.adjusted.then(|| spec.adjustment(&raw, taken)));
            value.set(taken.value);
        }
        Err(e) => notice.set(Some(e)),
    };
    // Unique even when one control appears several times (compare's columns).
    static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let id = format!("control-{testid}-{n}");
    // What a screen reader says as the slider moves: its name and its value
    // to the step's precision ("Temperature 0.50"), not a bare number.
    let digits = (-range.step.log10().floor()).max(0.0) as usize;
    // The marks stand under the label, where a touch screen sees them (it
    // never shows the tooltip); the number box is described by them.
    let marks = spec.marks(); // read from the help once, not at every move
    let line = marks.line();
    let marks_id = line.is_some().then(|| format!("{id}-marks"));
    // A marked value says what it means too ("Top-k 0 (off)").
    let spoken = move || {
        let v = value.get();
        match marks.means(v) {
            Some(means) => format!("{label} {v:.digits$} ({means})"),
            None => format!("{label} {v:.digits$}"),
        }
    };
    view! {
        <div class="control" class:locked=locked title=help data-control=spec.name>
            <span class="name">
                <label for=id.clone()>{label}</label>
                {line.map(|m| view! { <small class="marks" id=marks_id.clone()>{m}</small> })}
            </span>
            <input
                type="range"
                aria-label=label
                aria-valuetext=spoken
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
                aria-describedby=marks_id
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
    .into_any()
}

/// The controls `shown` names, in the page's order (the prompt has its own
/// editor and is skipped here).
#[component]
pub fn ControlsPanel(controls: Controls, shown: Shown) -> impl IntoView {
    // No panel where no control but the prompt (which has its own editor)
    // is shown: an empty one kept a grid column and a landmark with nothing in it.
    if shown.controls.iter().all(|&(control, _)| control == Control::Prompt) {
        return ().into_any();
    }
    let views = shown
        .controls
        .iter()
        .map(|&(control, locked)| {
            let spec = control.spec();
            match controls.value(control) {
                Value::Text(_) if control == Control::Prompt => ().into_any(),
                Value::Text(text) if matches!(spec.input, Input::Choice { .. }) => {
                    view! { <ChoiceControl spec=spec value=text locked=locked/> }.into_any()
                }
                Value::Text(text) => {
                    view! { <TextControl spec=spec text=text locked=locked/> }.into_any()
                }
                Value::Number(value) if control == Control::Seed => {
                    view! { <SeedControl spec=spec value=value locked=locked/> }.into_any()
                }
                Value::Number(value) => {
                    view! { <NumberControl spec=spec value=value locked=locked/> }.into_any()
                }
            }
        })
        .collect_view();
    view! { <section class="controls" aria-label="sampling controls">{views}</section> }.into_any()
}

/// The seed, with a button that draws a new one.
#[component]
fn SeedControl(spec: &'static Spec, value: RwSignal<f64>, locked: bool) -> impl IntoView {
    let Input::Number { range, .. } = spec.input else { return ().into_any() };
    view! {
        <div class="seed-row">
            <NumberControl spec=spec value=value locked=locked/>
            {(!locked).then(|| view! {
                <button data-testid="new-seed"
                    on:click=move |_| value.set((js_sys::Math::random() * range.max).floor())>"new seed"</button>
            })}
        </div>
    }
    .into_any()
}

/// A text control (stop strings): a box, one entry per line.
#[component]
fn TextControl(spec: &'static Spec, text: RwSignal<String>, locked: bool) -> impl IntoView {
    let id = format!("control-{}", spec.testid());
    view! {
        <div class="control" class:locked=locked title=spec.help data-control=spec.name>
            <label for=id.clone()>{spec.label}</label>
            // The line on what it takes shows in the empty box too, not
            // only as a tooltip, which a touch screen never shows.
            <textarea id=id data-testid=spec.testid() rows="2" disabled=locked placeholder=spec.help
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
        </div>
    }
}

/// A choice control: a drop-down of its options.
#[component]
pub fn ChoiceControl(spec: &'static Spec, value: RwSignal<String>, locked: bool) -> impl IntoView {
    let Input::Choice { options, .. } = spec.input else { return ().into_any() };
    let id = format!("control-{}", spec.testid());
    let options = options
        .iter()
        .map(|&o| view! { <option value=o selected=move || value.with(|v| v == o)>{o}</option> })
        .collect_view();
    view! {
        <div class="control" class:locked=locked title=spec.help data-control=spec.name>
            <label for=id.clone()>{spec.label}</label>
            <select id=id data-testid=spec.testid() disabled=locked
                prop:value=move || value.get()
                on:change=move |ev| value.set(event_target_value(&ev))>{options}</select>
        </div>
    }
    .into_any()
}

//! `kv-cache`: why decoding keeps keys and values. Every step timed with the
//! cache and without it on this page's engine, per step and in total, with
//! fitted curves and a check that both paths agree; the cache's bytes three
//! ways; the projection count of the lesson's formula; and a calculator
//! that prices the cache of any model.

mod calculator;
mod figures;
mod measure;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::controls::ControlsPanel;
use crate::driver::Driver;
use crate::playground::PromptEditor;
use crate::widgets::progress::ProgressBar;
use measure::Sinks;

#[component]
pub fn KvCache(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let sinks = Sinks::new();
    let start = move |_| {
        let up_to = c.number(Control::UpTo).get_untracked() as usize;
        d.launch(move |d| measure::measure(d, sinks, up_to));
    };
    let backend = d.lab.with_value(|l| l.backend.label());
    view! {
        <div class="widget-body kv-cache">
            <section class="editor">
                {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <div class="buttons">
                    <button data-testid="measure-kv" disabled=move || d.generating.get() on:click=start>"Time every step, with and without the cache"</button>
                    <button data-testid="stop-generation" disabled=move || !d.generating.get() on:click=move |_| d.stop()>"Stop"</button>
                </div>
                <ProgressBar progress=sinks.progress running=d.generating.into() testid="kv-progress"/>
                {move || d.error.get().map(|e| view! { <p class="error" role="alert" data-testid="error">{e}</p> })}
            </section>
            <ControlsPanel controls=c shown=shown/>
            <section class="panel">
                <p class="legend">{format!(
                    "Measured on this page's engine: {backend}. Step n makes the sequence (the prompt, then greedy tokens) n tokens long; each point is the median of {} runs. Without the cache every step up to n = {} is timed, then an even spread of the rest.",
                    measure::RUNS, measure::DENSE
                )}</p>
                <figures::Badge sinks=sinks/>
                <figures::Curves sinks=sinks/>
                <figures::BytesTable sinks=sinks/>
            </section>
            <section class="panel">
                <h3>"Projections: what the cache saves"</h3>
                <figures::Projections/>
                <h3>"How big is a cache?"</h3>
                <calculator::Calculator driver=d/>
            </section>
        </div>
    }
}

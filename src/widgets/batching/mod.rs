//! `batching`: why serving many readers at once is cheaper per token. One
//! prompt's continuations (seeds S, S + 1, …) run one after another and as
//! batched steps for B = 1, 2, 4, 8 on this page's engine: throughput and
//! per-step latency, each batched text checked against its run alone, the
//! matrix experiment (many vectors per pass) and what dominates a step.

mod figures;
mod measure;

use contract::Shown;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel};
use measure::Sinks;

#[component]
pub fn Batching(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let sinks = Sinks::default();
    view! {
        <div class="widget-body batching">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="batch-progress">
                <button data-testid="measure-batch" disabled=move || d.generating.get() on:click=move |_| d.launch(move |d| measure::measure(d, sinks))>"Run B = 1, 2, 4, 8"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then="Continuation i draws with seed + i; decode steps only (the prompt's pass is shared). A batched step advances every sequence by one token in one pass: the weights are read once for all of them.">
                <figures::Table sinks=sinks/>
                <figures::Curves sinks=sinks/>
                <figures::Decomposition sinks=sinks/>
                <figures::Texts sinks=sinks/>
            </MeasuredPanel>
            <section class="panel">
                <h3>"The matrix experiment: W · x for many x at once"</h3>
                <p class="legend">"Every weight matrix of the model applied to 1, 8, 32 and 128 vectors in one pass (a pass over that many tokens), median of 3: time per vector."</p>
                <figures::Passes sinks=sinks/>
            </section>
        </div>
    }
}

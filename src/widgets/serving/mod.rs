//! `serving`: continuous batching under an arrival trace. The same trace
//! replayed one request at a time, in static batches and with continuous
//! batching on B slots of this page's engine: the trace on a timeline, a
//! Gantt chart per scheduler, the figures, and every request's text
//! checked against its run alone.

mod figures;
mod gantt;
mod measure;

use contract::Shown;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel};
use measure::Sinks;

#[component]
pub fn Serving(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let sinks = Sinks::default();
    let start = move |_| d.launch(move |d| measure::measure(d, sinks));
    view! {
        <div class="widget-body serving">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="serve-progress">
                <button data-testid="measure-serve" disabled=move || d.generating.get() on:click=start>"Serve the trace"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then="Prompt 0 is yours; 1–4 are built in. A round is a newcomer's prefill into its slot, then one batched step that gives every running request a token. Each request draws with its own seed, so its text is the same however it is served.">
                <gantt::Timeline sinks=sinks/>
                <figures::Table sinks=sinks/>
                <gantt::Gantts sinks=sinks/>
                <figures::Texts sinks=sinks/>
            </MeasuredPanel>
        </div>
    }
}

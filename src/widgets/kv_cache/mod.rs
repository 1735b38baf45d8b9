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

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel};
use measure::Sinks;

#[component]
pub fn KvCache(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let sinks = Sinks::default();
    let start = move |_| {
        let up_to = c.number(Control::UpTo).get_untracked() as usize;
        d.launch(move |d| measure::measure(d, sinks, up_to));
    };
    view! {
        <div class="widget-body kv-cache">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="kv-progress">
                <button data-testid="measure-kv" disabled=move || d.generating.get() on:click=start>"Time every step, with and without the cache"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then=format!("Step n makes the sequence (the prompt, then greedy tokens) n tokens long; each point is the median of {} runs. Without the cache every step up to n = {} is timed, then an even spread of the rest.", measure::RUNS, measure::DENSE)>
                <figures::Badge sinks=sinks/>
                <figures::Curves sinks=sinks/>
                <figures::BytesTable sinks=sinks/>
            </MeasuredPanel>
            <section class="panel">
                <h3>"Projections: what the cache saves"</h3>
                <figures::Projections/>
                <h3>"How big is a cache?"</h3>
                <calculator::Calculator driver=d/>
            </section>
        </div>
    }
}

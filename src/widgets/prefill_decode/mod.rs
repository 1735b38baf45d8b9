//! `prefill-decode`: what a token costs, measured on this page's engine. One
//! greedy generation drawn call by call (the prompt's pass, then one decode
//! step per token), cold and warm; time to first token, pp and tg rates; a
//! switch that feeds the prompt token by token instead of in one pass; and
//! time to first token against prompt length.

mod figures;
mod measure;
mod timeline;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel};
use measure::{Mode, Sinks};

#[component]
pub fn PrefillDecode(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let sinks = Sinks::default();
    let mode = move || Mode::from_name(&c.text(Control::PrefillMode).get_untracked());
    let time = move |_| {
        let steps = c.number(Control::MaxTokens).get_untracked() as usize;
        let mode = mode();
        d.launch(move |d| measure::time_generation(d, sinks, steps, mode));
    };
    let curve = move |_| {
        let mode = mode();
        d.launch(move |d| measure::ttft_curve(d, sinks, mode));
    };
    let text = move || {
        sinks.text.get().map(|(text, same)| {
            let mark = if same { "✓ every run wrote this text" } else { "✗ the runs wrote different texts" };
            view! {
                <div class="readout">"Greedy continuation "<span data-testid="cost-same" data-same=same.to_string()>{mark}</span>":"
                    <pre class="cost-text" data-testid="cost-text">{text}</pre></div>
            }
        })
    };
    view! {
        <div class="widget-body prefill-decode">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="cost-progress">
                <button data-testid="time-generation" disabled=move || d.generating.get() on:click=time>"Time a generation"</button>
                <button data-testid="measure-curve" disabled=move || d.generating.get() on:click=curve>"Time the first token vs prompt length"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then=format!("Wall time of each call, readback included. The cold run is the first on a newly opened session; the warm figures are medians of {} more runs on it.", measure::WARM_RUNS)>
                <timeline::TimelineChart sinks=sinks/>
                <figures::FiguresTable sinks=sinks/>
                <figures::BandwidthLine sinks=sinks/>
                {text}
            </MeasuredPanel>
            <section class="panel">
                <p class="legend">{format!(
                    "Time to first token for prompts of 1 to n_positions − 1 tokens (this prompt's tokens repeated to length), median of {} passes each. One pass reads every weight once for the whole prompt; token by token reads them once per token.",
                    measure::CURVE_RUNS
                )}</p>
                <figures::CurvePanel sinks=sinks/>
            </section>
        </div>
    }
}

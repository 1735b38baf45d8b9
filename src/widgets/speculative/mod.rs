//! `speculative`: speculative decoding on the loaded model. Its own first
//! L blocks (read through the final LayerNorm and the LM head) draft K
//! tokens a round; the model checks them in one pass. Each round's tokens,
//! α, tokens per model pass against what α predicts, and the speed-up
//! measured against the model alone on this page's engine.

mod measure;
mod view;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel};
use measure::{Sinks, SWEEP};

#[component]
pub fn Speculative(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let sinks = Sinks::default();
    let one = move |_| {
        let k = d.controls.number(Control::Speculate).get_untracked() as usize;
        d.launch(move |d| measure::measure(d, sinks, vec![k]))
    };
    let sweep = move |_| d.launch(move |d| measure::measure(d, sinks, SWEEP.to_vec()));
    view! {
        <div class="widget-body speculative">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="spec-progress">
                <button data-testid="measure-spec" disabled=move || d.generating.get() on:click=one>"Draft and check"</button>
                <button data-testid="measure-spec-sweep" disabled=move || d.generating.get() on:click=sweep>"Sweep K = 2, 4, 8"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then="Each run first decodes the continuation with the model alone, then speculatively; every run adds a row.">
                <view::Table sinks=sinks/>
                <view::Verdict sinks=sinks/>
                <view::Text sinks=sinks/>
                <view::Rounds driver=d sinks=sinks/>
            </MeasuredPanel>
        </div>
    }
}

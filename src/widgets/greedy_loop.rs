//! Greedy decoding falling into a repetition loop: generate at T = 0, find
//! the periodic tail (`engine::sample::repeat::find_loop`) and highlight it;
//! one switch moves to sampling, which usually breaks the loop.

use contract::{Control, Shown};
use engine::sample::repeat::find_loop;
use leptos::prelude::*;

use crate::controls::ControlsPanel;
use crate::driver::Driver;
use crate::playground::{Buttons, Output, PromptEditor};

/// The temperature the "sampling" side of the switch uses (unless the URL
/// or the page already set a non-zero one).
const SAMPLING_T: f64 = 0.8;

#[component]
pub fn GreedyLoop(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let found = Memo::new(move |_| {
        let ids: Vec<u32> = d.chips.with(|chips| chips.iter().map(|c| c.id).collect());
        find_loop(&ids)
    });
    let highlight = Signal::derive(move || found.get().map(|l| (l.start, d.chips.with(Vec::len))));
    let last_sampling_t = StoredValue::new(SAMPLING_T);
    let choose = move |greedy: bool| {
        if greedy {
            let t = c.number(Control::Temperature).get_untracked();
            if t > 0.0 {
                last_sampling_t.set_value(t);
            }
            c.number(Control::Temperature).set(0.0);
        } else {
            c.number(Control::Temperature).set(last_sampling_t.get_value());
        }
        d.generate();
    };
    let greedy = move || c.number(Control::Temperature).get() == 0.0;
    let report = move || match (found.get(), d.chips.with(Vec::is_empty)) {
        (_, true) => "Generate to see where greedy decoding goes.".to_string(),
        (Some(l), _) => format!(
            "Loop: from token {} on, a span of {} token{} repeats {:.1} times (highlighted).",
            l.start + 1,
            l.period,
            if l.period == 1 { "" } else { "s" },
            l.repeats
        ),
        (None, _) => "No repetition loop at the end of this text.".to_string(),
    };
    view! {
        <div class="widget-body">
            <section class="editor">
                {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <div class="switch" role="group" aria-label="decoding">
                    <button data-testid="greedy" aria-pressed=move || greedy().to_string() class:on=greedy
                        disabled=move || d.generating.get() on:click=move |_| choose(true)>"greedy (T = 0)"</button>
                    <button data-testid="sampling" aria-pressed=move || (!greedy()).to_string() class:on=move || !greedy()
                        disabled=move || d.generating.get() on:click=move |_| choose(false)>
                        {move || format!("sampling (T = {})", if greedy() { last_sampling_t.get_value() } else { c.number(Control::Temperature).get() })}
                    </button>
                </div>
                <Buttons driver=d generate=true step=false typed={shown.get(Control::Prompt) == Some(false)}/>
                <Output driver=d highlight=highlight/>
                <p class="readout" data-testid="loop-report"
                    data-loop-start=move || found.get().map(|l| l.start.to_string()).unwrap_or_default()
                    data-loop-period=move || found.get().map(|l| l.period.to_string()).unwrap_or_default()>{report}</p>
            </section>
            <ControlsPanel controls=c shown=shown/>
        </div>
    }
}

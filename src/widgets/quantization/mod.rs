//! `quantization`: the loaded model's weights in every format the engine
//! has (f32, f16, bf16, int8 per tensor, int8 per channel, int4 per 32;
//! on the CPU engine int8 and int4 with 8-bit activations too),
//! measured on this device — bytes, decode speed, drift of the next-token
//! distribution on a held-out passage, where greedy text parts — then two
//! formats' texts side by side, one matrix's values on the grids, and the
//! memory table as a calculator.

mod histogram;
mod measure;
mod memory;
mod table;
mod texts;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel, Progress};
use measure::Sinks;

#[component]
pub fn Quantization(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let sinks = Sinks {
        rows: RwSignal::new(Vec::new()),
        progress: RwSignal::new(Progress::default()),
        heldout: RwSignal::new(None),
    };
    let texts: texts::Texts = RwSignal::new([Vec::new(), Vec::new()]);
    let c = d.controls;
    let measure = move |_| {
        let steps = c.number(Control::MaxTokens).get_untracked() as usize;
        let limit = c.number(Control::HeldOutTokens).get_untracked() as usize;
        d.launch(move |d| measure::measure(d, sinks, steps, limit));
    };
    let write = move |_| d.launch(move |d| texts::write_both(d, texts));
    let heldout = move || {
        sinks.heldout.get().map(|h| match h {
            Ok((tokens, bytes)) => format!("Held-out passage scored: {tokens} tokens, {bytes} bytes (the model never trained on it)."),
            Err(why) => format!("Held-out columns: {why}."),
        })
    };
    view! {
        <div class="widget-body quantization">
            <MeasureEditor driver=d shown=shown progress=sinks.progress testid="quant-progress">
                <button data-testid="measure" disabled=move || d.generating.get() on:click=measure>"Measure every format"</button>
                <button data-testid="write-texts" disabled=move || d.generating.get() on:click=write>"Write text A and text B"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d then="Decode speed: median of the greedy steps after the first. KL, top-1 and Δp compare each format's next-token distribution with f32's at every held-out position.">
                <table::FiguresTable sinks=sinks/>
                <p class="readout" data-testid="quant-heldout">{heldout}</p>
                <table::F16Verdict sinks=sinks/>
                <table::SpeedVerdict sinks=sinks/>
            </MeasuredPanel>
            <section class="panel">
                <texts::TextsPanel driver=d texts=texts/>
            </section>
            <histogram::Histogram driver=d/>
            <memory::MemoryCalculator driver=d/>
        </div>
    }
}

//! The memory table as a calculator: parameters × bytes per weight → GB in
//! each format, and the smallest common GPU that holds the weights (the KV
//! cache and activations come on top). 70 B parameters reproduces the lesson's
//! table: fp32 0.28 TB, fp16 140 GB, int8 70 GB, int4 35 GB.

use contract::Control;
use engine::storage::format::{Format, GROUP};
use leptos::prelude::*;

use crate::controls::NumberControl;
use crate::driver::Driver;
use crate::scroll::Scroll;

/// The lesson's table rows, each the engine format it prices (its bytes per
/// weight, scales apart: a 32-bit word over the weights it packs).
const FORMATS: [(&str, Format); 4] = [
    ("fp32", Format::F32),
    ("fp16 / bf16", Format::F16),
    ("int8", Format::Int8),
    ("int4", Format::Int4),
];

/// Common GPU memory sizes in GB, smallest first.
const GPUS: [(&str, f64); 7] = [
    ("8 GB (laptop)", 8.0),
    ("16 GB", 16.0),
    ("24 GB (RTX 4090)", 24.0),
    ("48 GB (L40S)", 48.0),
    ("80 GB (A100 / H100)", 80.0),
    ("141 GB (H200)", 141.0),
    ("192 GB (MI300X)", 192.0),
];

/// `gb` as the lesson writes sizes: MB below 1 GB, GB, and TB too from 250 GB.
pub fn size(gb: f64) -> String {
    match gb {
        gb if gb < 1.0 => format!("{:.1} MB", gb * 1000.0),
        gb if gb < 10.0 => format!("{gb:.1} GB"),
        gb if gb < 250.0 => format!("{gb:.0} GB"),
        gb => format!("{gb:.0} GB = {:.2} TB", gb / 1000.0),
    }
}

/// The smallest listed GPU holding `gb`, or how many of the largest it takes.
pub fn fits(gb: f64) -> String {
    match GPUS.iter().find(|(_, cap)| gb <= *cap) {
        Some((name, _)) => format!("one {name}"),
        None => {
            let (name, cap) = GPUS[GPUS.len() - 1];
            format!("{} × {name}", (gb / cap).ceil())
        }
    }
}

#[component]
pub fn MemoryCalculator(driver: Driver) -> impl IntoView {
    let params_b = driver.controls.number(Control::ParamsB);
    let this_model = driver.lab.with_value(|l| l.model.config.n_params()) as f64 / 1e9;
    let rows = move || {
        let p = params_b.get();
        FORMATS
            .iter()
            .map(|&(name, format)| {
                let bytes = 4.0 / format.per_word() as f64;
                let gb = p * bytes; // 1e9 parameters × bytes / 1e9 bytes per GB
                view! {
                    <tr data-testid="memory-row" data-format=name>
                        <th>{name}</th><td data-col="gb">{size(gb)}</td><td data-col="fits">{fits(gb)}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <section class="panel memory" data-testid="quant-memory">
            <div class="seed-row">
                <NumberControl spec=Control::ParamsB.spec() value=params_b/>
                <button data-testid="this-model" on:click=move |_| params_b.set(this_model)>
                    {format!("this model ({:.4} B)", this_model)}
                </button>
                <button data-testid="seventy-b" on:click=move |_| params_b.set(70.0)>"70 B"</button>
            </div>
            <Scroll label="the memory each format needs"><table class="figures">
                <thead><tr><th>"format"</th><th>"weights"</th><th>"fits in"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table></Scroll>
            <p class="legend">{format!(
                "Weights only: the KV cache and activations need memory on top. Scales add to the table's bytes: int4 keeps one f32 scale per {GROUP} weights (+{:.0} %), int8 one per output channel (under 1 % for a model 128 or more wide).",
                100.0 * 4.0 / GROUP as f64 / 0.5
            )}</p>
        </section>
    }
}

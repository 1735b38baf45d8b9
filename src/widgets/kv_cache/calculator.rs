//! The KV calculator: bytes = 2 · layers · KV heads · head size · bytes per
//! number · context · sequences, for any model, with presets from the loaded
//! model to a 70B model at 128K tokens (where the cache alone is tens of
//! gigabytes). Its inputs are controls, so the link carries them.

use contract::Control;
use engine::lessons::cost::kv_cache_bytes;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::size;

/// A model's cache shape: layers, KV heads, head size, bytes per number, context.
type Shape = (f64, f64, f64, f64, f64);

/// Published shapes (f16 caches, each model's own context length).
const PRESETS: [(&str, &str, Shape); 4] = [
    ("gpt2", "GPT-2 124M", (12.0, 12.0, 64.0, 2.0, 1024.0)),
    ("llama-2-7b", "Llama-2-7B", (32.0, 32.0, 128.0, 2.0, 4096.0)),
    ("llama-3-8b", "Llama-3-8B (GQA: 8 KV heads)", (32.0, 8.0, 128.0, 2.0, 8192.0)),
    ("70b-128k", "70B at 128K (GQA)", (80.0, 8.0, 128.0, 2.0, 131072.0)),
];

const INPUTS: [Control; 6] = [
    Control::KvLayers,
    Control::KvHeads,
    Control::HeadSize,
    Control::KvBytes,
    Control::Context,
    Control::Batch,
];

#[component]
pub fn Calculator(driver: Driver) -> impl IntoView {
    let c = driver.controls;
    let set = move |shape: Shape| {
        let (layers, heads, head_size, bytes, context) = shape;
        for (control, v) in INPUTS.into_iter().zip([layers, heads, head_size, bytes, context, 1.0])
        {
            c.number(control).set(v);
        }
    };
    let config = driver.lab.with_value(|l| l.model.config.clone());
    // This engine keeps its cache in f32.
    let this: Shape = (
        config.n_layer as f64,
        config.n_head as f64,
        (config.n_embd / config.n_head) as f64,
        4.0,
        config.n_positions as f64,
    );
    let buttons = std::iter::once(("this-model", "this model", this))
        .chain(PRESETS)
        .map(|(key, label, shape)| {
            view! { <button data-testid="kv-preset" data-preset=key on:click=move |_| set(shape)>{label}</button> }
        })
        .collect_view();
    let result = move || {
        let v: Vec<f64> = INPUTS.iter().map(|&i| c.number(i).get()).collect();
        let total = kv_cache_bytes(v[0], v[1], v[2], v[3], v[4], v[5]);
        let one = total / v[5];
        format!(
            "2 × {} layers × {} KV heads × {} × {} bytes × {} tokens = {} per sequence; × {} sequences = {}.",
            v[0], v[1], v[2], v[3], v[4], size(one), v[5], size(total)
        )
    };
    view! {
        <div class="buttons" role="group" aria-label="presets">{buttons}</div>
        <p class="readout" data-testid="kv-calc">{result}</p>
    }
}

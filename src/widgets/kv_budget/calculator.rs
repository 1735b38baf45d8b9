//! The memory calculator: bytes = 2 × layers × K/V heads × head size ×
//! tokens × bytes per value, beside the same model with a K/V head for every
//! query head — what sharing K/V heads (GQA; MQA at one) saves. Presets:
//! this model, GPT-2 124M at 1,024 tokens, a 70B model with 8 K/V heads at
//! 128K tokens. Its inputs are controls, so the link carries them.

use contract::Control;
use engine::lessons::cost::kv_cache_bytes;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::size;

/// Layers, query heads, K/V heads, head size, bytes per value, tokens.
type Shape = [f64; 6];

const INPUTS: [Control; 6] = [
    Control::KvLayers,
    Control::QueryHeads,
    Control::KvHeads,
    Control::HeadSize,
    Control::KvBytes,
    Control::Context,
];

/// Published shapes (f16 caches).
const PRESETS: [(&str, &str, Shape); 2] = [
    ("gpt2-1024", "GPT-2 124M at 1,024 tokens", [12.0, 12.0, 12.0, 64.0, 2.0, 1024.0]),
    ("70b-128k", "70B, 8 K/V heads, 128K tokens", [80.0, 64.0, 8.0, 128.0, 2.0, 131072.0]),
];

#[component]
pub fn Calculator(driver: Driver) -> impl IntoView {
    let c = driver.controls;
    let set = move |shape: Shape| {
        for (control, v) in INPUTS.into_iter().zip(shape) {
            c.number(control).set(v);
        }
    };
    let config = driver.lab.with_value(|l| l.model.config.clone());
    // Both engines keep this model's cache in f32, with the model's own K/V
    // heads: one per query head for GPT-2, grouped in training for the Llama
    // family (SmolLM2-135M: 3 for 9).
    let this: Shape = [
        config.n_layer as f64,
        config.n_head as f64,
        config.n_kv_head as f64,
        config.head_size as f64,
        4.0,
        config.n_positions as f64,
    ];
    let buttons = std::iter::once(("this-model", "this model", this))
        .chain(PRESETS)
        .map(|(key, label, shape)| {
            view! { <button data-testid="kv-budget-preset" data-preset=key on:click=move |_| set(shape)>{label}</button> }
        })
        .collect_view();
    let result = move || {
        let [layers, q_heads, kv_heads, head_size, bytes, tokens] =
            INPUTS.map(|i| c.number(i).get());
        let shared = kv_cache_bytes(layers, kv_heads, head_size, bytes, tokens, 1.0);
        let full = kv_cache_bytes(layers, q_heads, head_size, bytes, tokens, 1.0);
        let sharing = if kv_heads < q_heads {
            format!(
                "With a K/V head for each of the {q_heads} query heads it would be {} ({:.0}× more): {} query heads share each K/V head{}.",
                size(full),
                q_heads / kv_heads,
                q_heads / kv_heads,
                if kv_heads == 1.0 { " (multi-query attention)" } else { "" }
            )
        } else {
            "Every query head has its own K/V head (multi-head attention): nothing shared.".into()
        };
        format!(
            "2 × {layers} layers × {kv_heads} K/V heads × {head_size} × {bytes} bytes × {tokens} tokens = {} per sequence. {sharing}",
            size(shared)
        )
    };
    view! {
        <div class="buttons" role="group" aria-label="presets">{buttons}</div>
        <p class="readout" data-testid="kv-budget-calc">{result}</p>
    }
}

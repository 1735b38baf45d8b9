//! The playground: prompt, Generate / Step / Stop / Reset, the controls, the
//! output as chips tinted by their probability, the live distribution panel
//! and the stats line. Layout only; the behaviour is in `driver.rs`.

use leptos::prelude::*;

use crate::controls::{range, NumberControl};
use crate::distribution::{visible, DistributionPanel};
use crate::driver::{Chip, Driver};

#[component]
pub fn Playground(driver: Driver) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let settings = Signal::derive(move || c.settings());
    let bars = Signal::derive(move || c.bars.get() as usize);
    let input = Signal::derive(move || match d.selected.get() {
        Some(i) => d.chips.with(|chips| chips.get(i).map(|chip| chip.input.clone())),
        None => d.next.get(),
    });
    let lab = d.lab;
    let token_text = Callback::new(move |id: u32| lab.with_value(|l| l.token_text(id)));
    let pick = Callback::new(move |id: u32| d.step_once(Some(id)));
    let busy = move || d.generating.get();
    view! {
        <div class="playground">
            <section class="editor">
                <label for="prompt">"Prompt"</label>
                <textarea
                    id="prompt"
                    data-testid="prompt"
                    rows="3"
                    prop:value=move || d.prompt.get()
                    on:input=move |ev| d.prompt.set(event_target_value(&ev))
                ></textarea>
                <div class="buttons">
                    <button data-testid="generate" on:click=move |_| d.generate() disabled=busy>"Generate"</button>
                    <button data-testid="step" on:click=move |_| d.step_once(None) disabled=busy
                        title="one token: predict → choose → append">"Step"</button>
                    <button data-testid="stop" on:click=move |_| d.stop() disabled=move || !busy()>"Stop"</button>
                    <button data-testid="reset" on:click=move |_| d.reset()>"Reset"</button>
                </div>
                {move || d.error.get().map(|e| view! { <p class="error" role="alert" data-testid="error">{e}</p> })}
                <Output driver=d/>
                <StatsLine driver=d/>
            </section>
            <section class="controls" aria-label="sampling controls">
                <NumberControl label="Temperature" testid="temperature" value=c.temperature
                    range=range::TEMPERATURE help="0 = greedy (always the most likely token)"/>
                <NumberControl label="Top-k" testid="top-k" value=c.top_k
                    range=range::TOP_K help="keep the k most likely tokens; 0 = off"/>
                <NumberControl label="Top-p" testid="top-p" value=c.top_p
                    range=range::PROBABILITY help="keep the smallest set whose mass reaches p; 1 = off"/>
                <NumberControl label="Min-p" testid="min-p" value=c.min_p
                    range=range::PROBABILITY help="keep tokens with p ≥ min-p · p(top token); 0 = off"/>
                <NumberControl label="Repetition penalty" testid="repetition-penalty" value=c.repetition_penalty
                    range=range::REPETITION_PENALTY help="divides the logits of tokens already seen; 1 = off"/>
                <NumberControl label="Max new tokens" testid="max-tokens" value=c.max_tokens
                    range=range::MAX_TOKENS/>
                <div class="seed-row">
                    <NumberControl label="Seed" testid="seed" value=c.seed
                        range=range::SEED help="same seed + same settings = same text"/>
                    <button data-testid="new-seed" on:click=move |_| c.seed.set((js_sys::Math::random() * 4294967295.0).floor())>"new seed"</button>
                </div>
                <NumberControl label="Bars shown" testid="bars" value=c.bars range=range::BARS/>
                <div class="control">
                    <label for="stops">"Stop strings (one per line)"</label>
                    <textarea id="stops" data-testid="stop-strings" rows="2"
                        prop:value=move || c.stop.get() on:input=move |ev| c.stop.set(event_target_value(&ev))></textarea>
                </div>
                <p class="note">"Order: processors (repetition penalty) → temperature → top-k → top-p → min-p → renormalise → draw."</p>
            </section>
            <section class="panel">
                <h2>{move || match d.selected.get() {
                    Some(i) => format!("Step {}: what the model saw", i + 1),
                    None => "Next token".to_string(),
                }}</h2>
                {move || d.selected.get().map(|_| view! {
                    <p class="note">"Click a bar to branch from here with that token, or "
                        <button on:click=move |_| d.selected.set(None)>"back to the next token"</button></p>
                })}
                <DistributionPanel input=input settings=settings bars=bars token_text=token_text on_pick=pick/>
                <p class="note">"You are the sampler: click a bar to append that token instead of a drawn one."</p>
            </section>
        </div>
    }
}

/// Generated tokens as chips, tinted by the probability they had when chosen.
#[component]
fn Output(driver: Driver) -> impl IntoView {
    let d = driver;
    view! {
        <div class="output" aria-live="polite">
            <span class="prompt-echo">{move || d.prompt.get()}</span>
            <span data-testid="output">
                <For each=move || d.chips.get().into_iter().enumerate() key=|(i, chip)| (*i, chip.id) let:item>
                    <ChipView index=item.0 chip=item.1 driver=d/>
                </For>
            </span>
        </div>
    }
}

#[component]
fn ChipView(index: usize, chip: Chip, driver: Driver) -> impl IntoView {
    // Tint: strong for confident choices, pale for long shots.
    let alpha = 0.12 + 0.6 * chip.prob.clamp(0.0, 1.0);
    let newline = chip.text.contains('\n');
    let title = format!(
        "{:?}: p = {:.4}, rank {} (click for this step's distribution)",
        visible(&chip.text),
        chip.prob,
        chip.rank
    );
    view! {
        <span
            class="chip"
            class:newline=newline
            class:selected=move || driver.selected.get() == Some(index)
            style:background-color=format!("rgba(53, 88, 214, {alpha:.3})")
            title=title
            data-p=chip.prob.to_string()
            data-rank=chip.rank.to_string()
            on:click=move |_| driver.selected.set(Some(index))
        >{chip.text}</span>
    }
}

#[component]
fn StatsLine(driver: Driver) -> impl IntoView {
    let s = move || driver.stats.get();
    view! {
        <p class="stats" data-testid="stats" data-prefill-ms=move || s().prefill_ms.to_string()
            data-decode-ms=move || s().decode_ms.to_string() data-tokens-per-s=move || s().tokens_per_s.to_string()>
            {move || format!(
                "prefill {} tokens in {:.1} ms · decode {:.1} ms/token · {:.1} tokens/s · context {}/{} · KV cache {:.1} KiB",
                s().prompt_tokens, s().prefill_ms, s().decode_ms, s().tokens_per_s, s().context, s().n_positions,
                s().kv_bytes as f64 / 1024.0
            )}
        </p>
    }
}

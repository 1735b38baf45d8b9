//! The playground: prompt, Generate / Step / Stop / Reset, the controls, the
//! output as chips tinted by their probability, the live distribution panel
//! and the stats line. Layout only; the behaviour is in `driver/`.

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::controls::ControlsPanel;
use crate::distribution::{explained, visible, DistributionPanel};
use crate::driver::{Chip, Driver};

#[component]
pub fn Playground(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let prompt_locked = shown.get(Control::Prompt);
    view! {
        <div class="playground">
            <section class="editor">
                {prompt_locked.map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <Buttons driver=d generate=true step=true typed={prompt_locked == Some(false)}/>
                <Output driver=d/>
                <StatsLine driver=d/>
            </section>
            <ControlsPanel controls=d.controls shown=shown/>
            <section class="panel">
                <NextPanel driver=d pick=true/>
                <p class="note">"Order: processors (repetition, frequency and presence penalties, no-repeat n-gram) → temperature → top-k → top-p → min-p → renormalise → draw → stop strings."</p>
            </section>
        </div>
    }
}

/// The prompt; `locked` makes it read-only (`controls=prompt:locked`).
#[component]
pub fn PromptEditor(driver: Driver, #[prop(optional)] locked: bool) -> impl IntoView {
    let d = driver;
    view! {
        <label for="prompt">"Prompt"</label>
        <textarea
            id="prompt"
            data-testid="prompt"
            rows="3"
            readonly=locked
            prop:value=move || d.prompt.get()
            on:input=move |ev| d.prompt.set(event_target_value(&ev))
        ></textarea>
    }
}

/// Generate / Step / Stop / Reset (the ones asked for), and the error line.
/// `typed`: the prompt is shown and editable, so chat's Next turn (which
/// empties it for the user's next turn) is offered; a hidden or
/// `controls=prompt:locked` prompt could not take that turn.
#[component]
pub fn Buttons(driver: Driver, generate: bool, step: bool, typed: bool) -> impl IntoView {
    let d = driver;
    let busy = move || d.generating.get();
    view! {
        <div class="buttons">
            {generate.then(|| view! {
                <button data-testid="generate" on:click=move |_| d.generate() disabled=busy>"Generate"</button>
            })}
            {step.then(|| view! {
                <button data-testid="step" on:click=move |_| d.step_once(None) disabled=busy
                    title="one token: predict → choose → append">"Step"</button>
            })}
            {(generate && typed).then(|| view! { <NextTurn driver=d/> })}
            <button data-testid="stop-generation" on:click=move |_| d.stop() disabled=move || !busy()>"Stop"</button>
            <button data-testid="reset" on:click=move |_| d.reset()
                title="forget the output and read the prompt again">"Reset"</button>
        </div>
        {move || d.error.get().map(|e| view! { <p class="error" role="alert" data-testid="error">{e}</p> })}
        {move || d.notice.get().map(|n| view! { <p class="note notice" role="status" data-testid="run-notice">{n}</p> })}
    }
}

/// Chat's Next turn (only in chat, on a model with a chat template): there
/// is a reply to keep once the output has tokens.
#[component]
fn NextTurn(driver: Driver) -> impl IntoView {
    let d = driver;
    // Only chat=yes: typing in the system or turns box leaves the button be.
    let chats = move || d.controls.chat_on() && d.lab.with_value(|l| l.chats());
    let idle_with_reply = move || !d.generating.get() && d.chips.with(|c| !c.is_empty());
    move || {
        chats().then(|| view! {
            <button data-testid="next-turn" on:click=move |_| d.next_turn() disabled=move || !idle_with_reply()
                title="the prompt and the reply join the earlier turns; write the next user turn in the prompt">"Next turn"</button>
        })
    }
}

/// The distribution for the next token, or for a chip clicked in the output.
/// With `pick`, clicking a bar appends (or branches with) that token.
#[component]
pub fn NextPanel(driver: Driver, pick: bool) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let settings = Signal::derive(move || c.settings());
    let bars = Signal::derive(move || c.number(Control::Bars).get() as usize);
    let input = Signal::derive(move || match d.selected.get() {
        Some(i) => d.chips.with(|chips| chips.get(i).map(|chip| chip.input.clone())),
        None => d.next.get(),
    });
    let lab = d.lab;
    let token_text = Callback::new(move |id: u32| lab.with_value(|l| l.token_text(id)));
    let on_pick = pick.then(|| Callback::new(move |id: u32| d.step_once(Some(id))));
    view! {
        <h2>{move || match d.selected.get() {
            Some(i) => format!("Step {}: what the model saw", i + 1),
            None => "Next token".to_string(),
        }}</h2>
        {move || d.selected.get().map(|_| view! {
            <p class="note">{if pick { "Click a bar to branch from here with that token, or " } else { "" }}
                <button on:click=move |_| d.selected.set(None)>"back to the next token"</button></p>
        })}
        <DistributionPanel explanation=explained(input, settings) bars=bars token_text=token_text on_pick=on_pick
            stop=Some(c.text(Control::Stop))/>
        {pick.then(|| view! {
            <p class="note">"You are the sampler: click a bar to append that token instead of a drawn one."</p>
        })}
    }
}

/// Generated tokens as chips, tinted by the probability they had when chosen.
#[component]
pub fn Output(
    driver: Driver,
    #[prop(optional)] highlight: Option<Signal<Option<(usize, usize)>>>,
) -> impl IntoView {
    let d = driver;
    let emptied = Memo::new(move |_| d.chips.with(Vec::is_empty));
    view! {
        <div class="output" aria-live="polite">
            <span class="prompt-echo">{move || d.echo()}</span>
            <span data-testid="output">
                // The <For> is made anew when the output empties (Reset, Generate):
                // its rows' reactive owners are only freed with its parent, so a
                // <For> living as long as the page kept every chip's for good.
                {move || {
                    emptied.track();
                    view! {
                        <For each=move || d.chips.get().into_iter().enumerate() key=|(i, chip)| (*i, chip.id) let:item>
                            <ChipView index=item.0 chip=item.1 driver=d highlight=highlight/>
                        </For>
                    }
                }}
            </span>
        </div>
    }
}

#[component]
fn ChipView(
    index: usize,
    chip: Chip,
    driver: Driver,
    highlight: Option<Signal<Option<(usize, usize)>>>,
) -> impl IntoView {
    // In the highlighted span (the greedy loop's repeated tokens)?
    let in_span = move || {
        highlight.and_then(|h| h.get()).is_some_and(|(from, to)| (from..to).contains(&index))
    };
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
            class:loop=in_span
            data-loop=move || in_span().to_string()
            style:background-color=format!("rgba(53, 88, 214, {alpha:.3})")
            title=title
            data-p=chip.prob.to_string()
            data-rank=chip.rank.to_string()
            data-id=chip.id.to_string()
            on:click=move |_| driver.selected.set(Some(index))
        >{chip.text}</span>
    }
}

#[component]
pub fn StatsLine(driver: Driver) -> impl IntoView {
    let s = move || driver.stats.get();
    // The WGSL kernels' profile on WebGPU (read with each step: a lost
    // device moves the page to the CPU engine, which has none).
    let kernels = move || driver.lab.with_value(|l| l.backend.kernels());
    // Before the first decode step there is no figure to show, not a 0.0.
    let decode = move || match s().tokens_per_s > 0.0 {
        true => format!("decode {:.1} ms/token · {:.1} tokens/s", s().decode_ms, s().tokens_per_s),
        false => "decode: no step yet".to_string(),
    };
    view! {
        <p class="stats" data-testid="stats" data-prefill-ms=move || s().prefill_ms.to_string()
            data-decode-ms=move || s().decode_ms.to_string() data-tokens-per-s=move || s().tokens_per_s.to_string()
            data-workers=move || s().workers.map(|w| w.to_string())
            data-kernels=move || { s(); kernels() }>
            {move || format!(
                "prefill {} tokens in {:.1} ms · {} · context {}/{} · KV cache {:.1} KiB{}{}",
                s().prompt_tokens, s().prefill_ms, decode(), s().context, s().n_positions,
                s().kv_bytes as f64 / 1024.0,
                match s().workers {
                    Some(1) => " · 1 worker".to_string(),
                    Some(w) => format!(" · {w} workers"),
                    None => String::new(),
                },
                kernels().map(|k| format!(" · {k} kernels")).unwrap_or_default()
            )}
        </p>
    }
}

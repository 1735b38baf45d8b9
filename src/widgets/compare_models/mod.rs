//! `compare-models`: one prompt, two models side by side (issue 36). Model A
//! is this page's model; model B another checkpoint (`model_b=`) or the
//! same one in another weight format (`weights_b=`, by default int4: no
//! download). Both generate with the page's settings and seed; at each step
//! their distributions stand side by side, with KL(A ‖ B) and whether both
//! put the same token first where their vocabularies match (`live.rs`).

mod live;
mod open;

use std::rc::Rc;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::controls::ControlsPanel;
use crate::distribution::{explained, visible, DistributionPanel};
use crate::driver::Driver;
use crate::scroll::Scroll;
use crate::widgets::measuring::{MeasureEditor, Progress};
use live::{Sinks, Vocab};
use open::{ModelB, NotOpened};

/// Steps a generation keeps at most: each holds both models' logits
/// (GPT-2's: 2 × 201 KB a step).
const MAX_STEPS: usize = 200;

#[component]
pub fn CompareModels(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let sinks = Sinks::default();
    let progress = RwSignal::new(Progress::default());
    let model_b: StoredValue<Option<Rc<ModelB>>, LocalStorage> = StoredValue::new_local(None);
    let label_b = RwSignal::new(None::<String>);
    // A big download of model B waits for the user's yes: (as asked, the question).
    let confirm = RwSignal::new(None::<((String, String), String)>);
    let start = move |confirmed: bool| {
        let asked =
            (c.text(Control::ModelB).get_untracked(), c.text(Control::WeightsB).get_untracked());
        let steps = c.number(Control::MaxTokens).get_untracked() as usize;
        confirm.set(None);
        d.launch(move |d| async move {
            let open_now =
                model_b.with_value(|b| b.as_ref().map(|b| b.asked.clone())) != Some(asked.clone());
            if open_now {
                model_b.set_value(None);
                sinks.vocab.set(None);
                label_b.set(None);
                let report = move |p: crate::lab::Progress| {
                    let total = p.total.unwrap_or(0).max(p.loaded) as usize;
                    progress.set(Progress {
                        what: format!("model B: {}", p.what),
                        done: p.loaded as usize,
                        total,
                    })
                };
                report(crate::lab::Progress { what: "opening".into(), loaded: 0, total: None });
                let opened = match open::open(d, asked.clone(), confirmed, report).await {
                    Ok(b) => Rc::new(b),
                    Err(NotOpened::Failed(why)) => return Err(why),
                    Err(NotOpened::Confirm(big)) => {
                        confirm.set(Some((asked, big.question())));
                        return Ok(());
                    }
                };
                label_b.set(Some(opened.label.clone()));
                model_b.set_value(Some(opened));
            }
            let Some(b) = model_b.get_value() else { return Ok(()) };
            progress.set(Progress { what: "generating on both models".into(), done: 0, total: 0 });
            // Every step keeps both models' logits (the panels redraw any step).
            let steps = d.limited(
                Control::MaxTokens,
                steps,
                steps.min(MAX_STEPS),
                "1–200 here (each step keeps both models' logits)",
            );
            live::generate(d, sinks, b, steps).await
        });
    };
    let label_a = d.lab.with_value(|l| l.backend.label());
    view! {
        <div class="widget-body compare-models">
            <MeasureEditor driver=d shown=shown.clone() progress=progress testid="compare-models-progress" controls=false>
                <button data-testid="generate-compare-models" disabled=move || d.generating.get() on:click=move |_| start(false)>"Generate on both"</button>
            </MeasureEditor>
            {move || confirm.get().map(|((address, _), question)| view! {
                <p class="note notice" role="status" data-testid="compare-confirm">{format!("Model B ({address}): {question} ")}
                    <button data-testid="compare-confirm-download" on:click=move |_| start(true)>"Download model B and generate"</button></p>
            })}
            <ControlsPanel controls=c shown=shown/>
            <section class="panel">
                <h3>"The two models"</h3>
                <p class="legend" data-testid="compare-model-a">{format!("Model A: this page's model ({label_a}).")}</p>
                <p class="legend" data-testid="compare-model-b">{move || match label_b.get() {
                    Some(l) => format!("Model B: {l}, on the same engine."),
                    None => "Model B opens when you generate (model_b and weights_b say which).".into(),
                }}</p>
                <VocabLine sinks=sinks/>
                <Summary sinks=sinks/>
                <div class="compare-texts">
                    <p class="output" data-testid="compare-text-a"><strong>"A: "</strong>{move || sinks.texts[0].get()}</p>
                    <p class="output" data-testid="compare-text-b"><strong>"B: "</strong>{move || sinks.texts[1].get()}</p>
                </div>
            </section>
            <section class="panel">
                <h3>"Step by step, side by side"</h3>
                <SideBySide driver=d sinks=sinks model_b=model_b/>
                <StepTable sinks=sinks/>
            </section>
        </div>
    }
}

/// Whether the vocabularies match, and so whether KL and top-1 mean anything.
#[component]
fn VocabLine(sinks: Sinks) -> impl IntoView {
    move || {
        let v = sinks.vocab.get()?;
        let (same, text) = match v {
            Vocab::Same(n) => (true, format!("Same vocabulary ({n} tokens): each step compares the two distributions token by token.")),
            Vocab::Differ(_, _, why) => (false, format!("The vocabularies differ ({why}): a token id means different text in each, so there is no KL divergence or top-1 agreement to show; the distributions stand side by side as they are.")),
        };
        Some(
            view! { <p class="readout" data-testid="compare-vocab" data-match=same.to_string()>{text}</p> },
        )
    }
}

/// Means over the steps, and where the texts part.
#[component]
fn Summary(sinks: Sinks) -> impl IntoView {
    move || {
        let rows = sinks.steps.get();
        let ended = sinks.ended.get().map(|e| format!(" {e}.")).unwrap_or_default();
        let kls: Vec<f64> = rows.iter().filter_map(|r| r.kl).collect();
        if kls.is_empty() {
            return (!rows.is_empty()).then(|| view! {
                <p class="readout" data-testid="compare-summary" data-steps=rows.len().to_string()>{format!("{} steps.{ended}", rows.len())}</p>
            }.into_any());
        }
        let n = kls.len() as f64;
        let mean = kls.iter().sum::<f64>() / n;
        let agree = rows.iter().filter(|r| r.same_top1 == Some(true)).count() as f64 / n;
        let parted = rows.iter().position(|r| r.a.token != r.b.token || !r.same_context);
        // Every figure is on one context, A's text: say so where B's own text went elsewhere.
        let parts = match parted {
            Some(i) => format!(
                "The texts part at step {}; from step {} on model B is scored on the tokens A wrote, so every step compares the two models on A's text.",
                i + 1,
                i + 2
            ),
            None => format!("The texts are the same for all {} steps.", rows.len()),
        };
        Some(view! {
            <p class="readout" data-testid="compare-summary" data-steps=rows.len().to_string()
                data-mean-kl=mean.to_string() data-top1=agree.to_string()
                data-parted=parted.map_or(0, |i| i + 1).to_string()>{format!(
                "Mean KL(A ‖ B) {mean:.4} nats on A's text; the same top token at {:.0} % of {} steps. {parts}{ended}",
                agree * 100.0,
                rows.len()
            )}</p>
        }.into_any())
    }
}

/// The chosen step's two distributions under the page's settings now.
#[component]
fn SideBySide(
    driver: Driver,
    sinks: Sinks,
    model_b: StoredValue<Option<Rc<ModelB>>, LocalStorage>,
) -> impl IntoView {
    let d = driver;
    let at = move || {
        let n = sinks.steps.with(Vec::len);
        sinks.selected.get().filter(|&s| s < n).or(n.checked_sub(1))
    };
    let settings = Signal::derive(move || d.controls.settings());
    let input = |b: bool| {
        Signal::derive(move || {
            let step = at()?;
            sinks.steps.with(|s| {
                s.get(step).map(|r| if b { r.b.input.clone() } else { r.a.input.clone() })
            })
        })
    };
    let (explained_a, explained_b) =
        (explained(input(false), settings), explained(input(true), settings));
    let bars = Signal::derive(move || d.controls.number(Control::Bars).get() as usize);
    let text_a = Callback::new(move |id: u32| d.lab.with_value(|l| l.token_text(id)));
    let text_b = Callback::new(move |id: u32| {
        model_b
            .with_value(|b| b.as_ref().map(|b| b.tokenizer.decode(&[id]).unwrap_or_default()))
            .unwrap_or_default()
    });
    let picker = move || {
        let step = at()?;
        let n = sinks.steps.with(Vec::len);
        let row = sinks.steps.with(|s| s[step].clone());
        let compared = match (row.kl, row.same_top1) {
            (Some(kl), Some(same)) => format!(
                "KL(A ‖ B) {kl:.4} nats; {}; {}",
                if same { "✓ the same top token" } else { "✗ different top tokens" },
                if row.same_context {
                    "both after the same text"
                } else {
                    "model B scored on A's text (the panels show each model's own)"
                }
            ),
            _ => "Not compared: the vocabularies differ".into(),
        };
        Some(view! {
            <label class="step-pick">{format!("Step {} of {n} ", step + 1)}
                <input type="range" min="1" max=n.to_string() value=(step + 1).to_string()
                    aria-label="the step both panels show" data-testid="compare-step"
                    on:input=move |e| sinks.selected.set(event_target_value(&e).parse::<usize>().ok().map(|s| s.saturating_sub(1)))/>
            </label>
            <p class="readout" data-testid="compare-step-readout">{format!(
                "A wrote {}, B wrote {}. {compared}.",
                visible(&row.a.token),
                visible(&row.b.token)
            )}</p>
        })
    };
    view! {
        {picker}
        <div class="compare-side">
            <div data-testid="compare-dist-a"><h4>"Model A"</h4>
                <DistributionPanel explanation=explained_a bars=bars token_text=text_a stop=None/></div>
            <div data-testid="compare-dist-b"><h4>"Model B"</h4>
                <DistributionPanel explanation=explained_b bars=bars token_text=text_b stop=None/></div>
        </div>
    }
}

/// Every step: both tokens, KL, top-1 and whether the texts were the same.
#[component]
fn StepTable(sinks: Sinks) -> impl IntoView {
    move || {
        let rows = sinks.steps.get();
        if rows.is_empty() {
            return None;
        }
        let yes_no = |v: Option<bool>, yes: &'static str, no: &'static str| match v {
            Some(true) => yes,
            Some(false) => no,
            None => "—",
        };
        let body = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                view! {
                    <tr data-testid="compare-row" data-kl=r.kl.map_or(String::new(), |k| k.to_string())
                        data-same=r.same_top1.map_or(String::new(), |s| s.to_string())
                        data-token-a=r.a.token.clone() data-token-b=r.b.token.clone()
                        data-id-a=r.a.id.to_string() data-id-b=r.b.id.to_string()
                        data-same-context=r.same_context.to_string()>
                        <td>{i + 1}</td>
                        <td class="token">{visible(&r.a.token)}</td>
                        <td class="token">{visible(&r.b.token)}</td>
                        <td>{r.kl.map_or("—".into(), |k| format!("{k:.4}"))}</td>
                        <td>{yes_no(r.same_top1, "✓ same", "✗ differs")}</td>
                        <td>{yes_no(r.same_top1.map(|_| r.same_context), "the same text", "A's text")}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(view! {
            <Scroll label="each step of both models">
                <table class="compare-steps">
                    <thead><tr><th>"Step"</th><th>"A wrote"</th><th>"B wrote"</th><th>"KL(A ‖ B), nats"</th><th>"Top token"</th><th>"Compared on"</th></tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </Scroll>
        })
    }
}

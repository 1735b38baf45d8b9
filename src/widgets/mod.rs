//! The widget catalogue (`?widget=NAME`): each a focused view of one lesson,
//! built from the playground's parts. The distribution widgets run on the
//! live model's next-token distribution for the prompt, or on an author's
//! own logits (`logits=`); the loop widgets need the model.

mod attention;
mod batching;
mod beam_tree;
pub(crate) mod chart;
mod compare;
mod compare_models;
mod device;
mod greedy_loop;
mod kv_budget;
mod kv_cache;
mod logit_lens;
mod measuring;
mod nucleus;
mod pipeline;
mod prefill_decode;
mod quantization;
mod quiz;
mod runs;
mod serving;
mod speculative;

pub use compare::Columns;
pub use quiz::QuizQuestions;

use std::sync::Arc;

use engine::sample::StageKind;

use contract::{Control, Shown, Widget, CONFIDENT_PROMPT, LONG_TAILED_PROMPT};
use leptos::prelude::*;

use crate::browser::debounced;
use crate::controls::ControlsPanel;
use crate::distribution::{explained, DistributionPanel, Explained, StepInput};
use crate::driver::Driver;
use crate::playground::{Buttons, NextPanel, Output, PromptEditor, StatsLine};
use crate::registry::Controls;
use nucleus::NucleusChart;

/// Author-given logits: one set, or two (`A;B`) for the top-p switch.
#[derive(Clone, Copy)]
pub struct Logits {
    pub sets: StoredValue<Vec<StepInput>>,
    pub labels: StoredValue<Vec<Vec<String>>>,
    pub current: RwSignal<usize>,
}

impl Logits {
    pub fn new(sets: Vec<Vec<f32>>, labels: Vec<Vec<String>>) -> Logits {
        let sets =
            sets.into_iter().map(|l| StepInput::new(Arc::new(l), Arc::new(Vec::new()))).collect();
        Logits {
            sets: StoredValue::new(sets),
            labels: StoredValue::new(labels),
            current: RwSignal::new(0),
        }
    }
}

/// Where a distribution widget's numbers come from.
// Both variants are handles to arena-stored signals (Copy); the size gap is
// a few hundred bytes on the stack, not worth a Box that breaks Copy.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
pub enum Source {
    Model(Driver),
    Logits(Logits),
}

impl Source {
    fn input(self) -> Signal<Option<StepInput>> {
        match self {
            Source::Model(d) => d.next.into(),
            Source::Logits(l) => {
                Signal::derive(move || l.sets.with_value(|s| s.get(l.current.get()).cloned()))
            }
        }
    }

    fn token_text(self) -> Callback<u32, String> {
        match self {
            Source::Model(d) => {
                Callback::new(move |id: u32| d.lab.with_value(|l| l.token_text(id)))
            }
            Source::Logits(l) => Callback::new(move |id: u32| {
                let set = l.current.get_untracked();
                l.labels
                    .with_value(|labels| labels.get(set).and_then(|s| s.get(id as usize)).cloned())
                    .unwrap_or_else(|| id.to_string())
            }),
        }
    }
}

/// The widget `widget` on `source`.
#[component]
pub fn WidgetView(
    widget: Widget,
    source: Source,
    controls: Controls,
    shown: Shown,
) -> impl IntoView {
    // The one place a widget's view is named: exhaustive, so a widget added
    // to the table (contract::WIDGETS) without a view does not compile.
    let needs = |view: fn(Driver, Shown) -> AnyView| {
        match source {
        Source::Model(d) => view(d, shown.clone()),
        // The page opens the model for every widget whose row needs it.
        Source::Logits(_) => view! { <p class="error" role="alert">"this widget runs on the model, not on logits="</p> }.into_any(),
    }
    };
    match widget {
        Widget::Temperature | Widget::TopK | Widget::TopP | Widget::MinP | Widget::Pipeline => {
            view! { <DistributionWidget widget=widget source=source controls=controls shown=shown.clone()/> }
                .into_any()
        }
        Widget::Step => needs(|d, shown| view! { <LoopWidget driver=d shown=shown generate=false/> }.into_any()),
        Widget::Generate => needs(|d, shown| view! { <LoopWidget driver=d shown=shown generate=true/> }.into_any()),
        Widget::GreedyLoop => needs(|d, shown| view! { <greedy_loop::GreedyLoop driver=d shown=shown/> }.into_any()),
        Widget::Compare => needs(|d, shown| view! { <compare::Compare driver=d shown=shown/> }.into_any()),
        Widget::Quantization => {
            needs(|d, shown| view! { <quantization::Quantization driver=d shown=shown/> }.into_any())
        }
        Widget::PrefillDecode => {
            needs(|d, shown| view! { <prefill_decode::PrefillDecode driver=d shown=shown/> }.into_any())
        }
        Widget::KvCache => needs(|d, shown| view! { <kv_cache::KvCache driver=d shown=shown/> }.into_any()),
        Widget::Batching => needs(|d, shown| view! { <batching::Batching driver=d shown=shown/> }.into_any()),
        Widget::KvBudget => needs(|d, shown| view! { <kv_budget::KvBudget driver=d shown=shown/> }.into_any()),
        Widget::Serving => needs(|d, shown| view! { <serving::Serving driver=d shown=shown/> }.into_any()),
        Widget::Speculative => needs(|d, shown| view! { <speculative::Speculative driver=d shown=shown/> }.into_any()),
        Widget::LogitLens => needs(|d, shown| view! { <logit_lens::LogitLens driver=d shown=shown/> }.into_any()),
        Widget::Attention => needs(|d, shown| view! { <attention::Attention driver=d shown=shown/> }.into_any()),
        Widget::BeamTree => needs(|d, shown| view! { <beam_tree::BeamTree driver=d shown=shown/> }.into_any()),
        Widget::Quiz => needs(|d, shown| view! { <quiz::Quiz driver=d shown=shown/> }.into_any()),
        Widget::CompareModels => needs(|d, shown| view! { <compare_models::CompareModels driver=d shown=shown/> }.into_any()),
        Widget::Device => needs(|d, shown| view! { <device::Device driver=d shown=shown/> }.into_any()),
    }
}

/// temperature, top-k, top-p, min-p and pipeline: one distribution, reshaped.
#[component]
fn DistributionWidget(
    widget: Widget,
    source: Source,
    controls: Controls,
    shown: Shown,
) -> impl IntoView {
    let c = controls;
    let settings = Signal::derive(move || c.settings());
    // One explanation per control change, shared by every view of it.
    let explanation = explained(source.input(), settings);
    let bars = Signal::derive(move || c.number(Control::Bars).get() as usize);
    let token_text = source.token_text();
    let prompt = match source {
        Source::Model(d) => shown.get(Control::Prompt).map(|locked| {
            reread_prompt_on_edit(d);
            view! { <div class="editor"><PromptEditor driver=d locked=locked/></div> }
        }),
        Source::Logits(_) => None,
    };
    let switch = (widget == Widget::TopP).then(|| view! { <StepSwitch source=source/> });
    let main = match widget {
        Widget::Pipeline => view! {
            <pipeline::PipelineTable explanation=explanation bars=bars token_text=token_text/>
        }
        .into_any(),
        _ => view! {
            {(widget == Widget::TopP).then(|| view! { <NucleusChart explanation=explanation top_p=c.number(Control::TopP)/> })}
            {(widget == Widget::MinP).then(|| view! { <MinPThreshold explanation=explanation min_p=c.number(Control::MinP)/> })}
            <DistributionPanel explanation=explanation bars=bars token_text=token_text stop=None/>
        }
        .into_any(),
    };
    view! {
        <div class=format!("widget-body {}", widget.name())>
            {prompt}
            {switch}
            <ControlsPanel controls=c shown=shown/>
            <section class="panel">{main}</section>
        </div>
    }
}

/// A distribution widget follows its prompt as it is edited (debounced: one
/// prefill after typing pauses, not one per key).
fn reread_prompt_on_edit(d: Driver) {
    let reread = debounced(400, move || d.reset());
    Effect::new(move |prev: Option<()>| {
        d.prompt.track();
        if prev.is_some() {
            reread(); // not on the first run: the load already read the prompt
        }
    });
}

/// The top-p widget's switch between a confident and a long-tailed step.
#[component]
fn StepSwitch(source: Source) -> impl IntoView {
    let choices: Vec<(&'static str, Callback<()>, Signal<bool>)> = match source {
        Source::Model(d) => {
            [("confident step", CONFIDENT_PROMPT), ("long-tailed step", LONG_TAILED_PROMPT)]
                .into_iter()
                .map(|(label, prompt)| {
                    let on = Signal::derive(move || d.prompt.with(|p| p == prompt));
                    (label, Callback::new(move |_| d.prompt.set(prompt.into())), on)
                })
                .collect()
        }
        Source::Logits(l) if l.sets.with_value(Vec::len) == 2 => {
            [("first set", 0), ("second set", 1)]
                .into_iter()
                .map(|(label, i)| {
                    let on = Signal::derive(move || l.current.get() == i);
                    (label, Callback::new(move |_| l.current.set(i)), on)
                })
                .collect()
        }
        Source::Logits(_) => Vec::new(),
    };
    (!choices.is_empty()).then(|| {
        let buttons = choices
            .into_iter()
            .map(|(label, pick, on)| {
                view! {
                    <button data-testid="switch-step" aria-pressed=move || on.get().to_string()
                        class:on=on on:click=move |_| pick.run(())>{label}</button>
                }
            })
            .collect_view();
        view! { <div class="switch" role="group" aria-label="which step">{buttons}</div> }
    })
}

/// min-p's cut in numbers: the threshold is relative to the top token of the
/// distribution min-p cuts (the one after top-p).
#[component]
fn MinPThreshold(explanation: Explained, min_p: RwSignal<f64>) -> impl IntoView {
    let line = move || {
        let e = explanation.get()?.ok()?;
        let before = e.stage(StageKind::TopP);
        let p_max = before.probs.iter().copied().fold(0.0, f64::max);
        let min_p = min_p.get();
        Some(format!(
            "top token p = {p_max:.4}; threshold = min-p × p(top) = {min_p} × {p_max:.4} = {:.4}",
            min_p * p_max
        ))
    };
    view! { <p class="readout" data-testid="min-p-threshold">{line}</p> }
}

/// `step` (predict → choose → append, one click at a time, bars pickable) or
/// `generate` (streaming, every run listed so equal seeds show equal text).
#[component]
fn LoopWidget(driver: Driver, shown: Shown, generate: bool) -> impl IntoView {
    let d = driver;
    view! {
        <div class="widget-body">
            <section class="editor">
                {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <Buttons driver=d generate=generate step=!generate typed={shown.get(Control::Prompt) == Some(false)}/>
                <Output driver=d/>
                <StatsLine driver=d/>
            </section>
            <ControlsPanel controls=d.controls shown=shown/>
            <section class="panel">
                {if generate {
                    view! { <runs::RunsTable driver=d/> }.into_any()
                } else {
                    view! { <NextPanel driver=d pick=true/> }.into_any()
                }}
            </section>
        </div>
    }
}

//! `kv-budget`: the KV cache under a memory budget (issue 34). Choose what a
//! cache of a few tokens keeps — the most recent (`window`), the first few
//! as attention sinks and the most recent (`sinks`, StreamingLLM), or the
//! ones that received the most attention and the most recent (`heavy`,
//! H2O) — then generate live beside a full cache fed the same tokens (a
//! strip of which tokens are held at each step; KL and same top-1 per
//! step), measure every policy over budgets and every number of K/V head
//! groups on the held-out passage, and price a cache with grouped K/V heads.

mod calculator;
mod engines;
mod live;
mod measure;

use contract::{Control, Shown};
use engine::kv_policy::{KvPolicy, Positions};
use engine::model::Family;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::MeasureEditor;

/// The policy the controls describe, for a cache of `budget` tokens
/// (`positions` counts for the sinks policy alone).
pub fn policy(kind: &str, budget: usize, sinks: usize, positions: Positions) -> KvPolicy {
    let budget = budget.max(1);
    match kind {
        "window" => KvPolicy::Window { window: budget },
        "heavy" => {
            let heavy = budget / 2;
            KvPolicy::Heavy { heavy, recent: budget - heavy }
        }
        _ => {
            // At least the newest token is kept beside the sinks.
            let sinks = sinks.min(budget - 1);
            KvPolicy::SinksWindow { sinks, window: budget - sinks, positions }
        }
    }
}

/// What evicting a token does to the tokens kept, for this model's way of
/// placing positions.
fn legend(config: &engine::model::Config) -> String {
    match config.family {
        Family::Gpt2 => "GPT-2 adds a token's position to its embedding at the input, so a kept token's keys and values never change when others leave: evicting a token is exactly hiding it from every later query (and Positions has nothing to renumber: it counts on models with rotary positions).".into(),
        Family::Llama(_) => format!(
            "This model turns each key by its position (rotary positions) before caching it, and {} query heads share each of its {} K/V heads (grouped in training). With Positions at original, a kept token keeps the turn of its original position, so evicting a token is exactly hiding it, and a query sees each kept key at its true distance. With Positions at cache (the sinks policy), StreamingLLM numbers the kept tokens by their place in the cache: when a token leaves, every kept key after it turns back one position, so the sinks sit at distances the model saw in training; a window alone keeps every distance either way.",
            config.n_head / config.n_kv_head.max(1),
            config.n_kv_head
        ),
    }
}

/// The positions the page's controls ask for, on a model that can renumber
/// (GPT-2's positions are in its embeddings: original).
fn positions(d: Driver) -> Positions {
    let rotary = d.lab.with_value(|l| l.model.config.llama().is_some());
    match d.controls.text(Control::KvPositions).get_untracked().as_str() {
        "cache" if rotary => Positions::Cache,
        _ => Positions::Original,
    }
}

/// The policy the page's controls describe now.
fn chosen(d: Driver) -> KvPolicy {
    let c = d.controls;
    let kind = c.text(Control::KvPolicy).get_untracked();
    let budget = c.number(Control::KvBudget).get_untracked() as usize;
    let sinks = c.number(Control::KvSinks).get_untracked() as usize;
    policy(&kind, budget, sinks, positions(d))
}

#[component]
pub fn KvBudget(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let live = live::Sinks::default();
    let measured = measure::Sinks::default();
    let generate = move |_| {
        let policy = chosen(d);
        let steps = c.number(Control::MaxTokens).get_untracked() as usize;
        let groups = c.number(Control::KvGroups).get_untracked() as usize;
        d.launch(move |d| live::generate(d, live, policy, groups, steps));
    };
    let run_measure = move |_| {
        let sinks = c.number(Control::KvSinks).get_untracked() as usize;
        let limit = c.number(Control::HeldOutTokens).get_untracked() as usize;
        d.launch(move |d| measure::measure(d, measured, sinks, limit));
    };
    let (backend, legend) = d.lab.with_value(|l| (l.backend.label(), legend(&l.model.config)));
    view! {
        <div class="widget-body kv-budget">
            <MeasureEditor driver=d shown=shown progress=measured.progress testid="kv-budget-progress">
                <button data-testid="generate-kv-budget" disabled=move || d.generating.get() on:click=generate>"Generate under the budget"</button>
                <button data-testid="measure-kv-budget" disabled=move || d.generating.get() on:click=run_measure>"Measure every policy"</button>
            </MeasureEditor>
            <section class="panel">
                <h3>"Which tokens the cache holds"</h3>
                <p class="legend" data-testid="kv-budget-legend">{format!(
                    "Run on this page's engine ({backend}). {legend} Each step is compared with a full cache fed the same tokens."
                )}</p>
                <live::Strip sinks=live/>
                <live::StepTable sinks=live/>
            </section>
            <section class="panel">
                <h3>"What each policy costs, budget by budget"</h3>
                <measure::Curves sinks=measured/>
            </section>
            <section class="panel">
                <h3>"How big is a cache? Fewer K/V heads"</h3>
                <calculator::Calculator driver=d/>
            </section>
        </div>
    }
}

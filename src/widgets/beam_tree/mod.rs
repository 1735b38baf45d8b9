//! `beam-tree`: what beam search keeps and throws away, live on the loaded
//! model. Every step's 2·B candidates drawn as a tree (kept, pruned,
//! finished), each with its rank, log-probability, cumulative and
//! normalised score; the finished hypotheses re-ranked as the length
//! penalty moves (no re-run); what the search cost (passes, KV copies); the
//! best beam beside a sampled text of the same prompt.

mod panels;
mod search;
mod tree;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, Progress};
use search::{scoring, Tree, MAX_STEPS};

#[component]
pub fn BeamTree(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let tree = RwSignal::new(Tree::default());
    let sampled = RwSignal::new(None);
    let progress = RwSignal::new(Progress::default());
    let selected = RwSignal::new(None);
    let run = move || {
        selected.set(None);
        d.launch_when_idle(move |d| search::run(d, tree, sampled, progress))
    };
    run();
    let scoring = Signal::derive(move || scoring(c));
    let capped = move || {
        let asked = c.number(Control::MaxTokens).get();
        let used = asked.min(MAX_STEPS as f64);
        Control::MaxTokens.spec().limited(asked, used, &format!("the tree's {MAX_STEPS} steps"))
    };
    view! {
        <div class="widget-body beam-tree">
            <MeasureEditor driver=d shown=shown progress=progress testid="beam-progress">
                <button data-testid="run-beams" disabled=move || d.generating.get() on:click=move |_| run()>"Search again"</button>
            </MeasureEditor>
            <section class="panel">
                <p class="legend">"Columns: steps; rows: each step's 2·B best extensions of the live beams, best (highest cumulative log-probability) at the top. Solid: kept as a beam; faded: pruned; boxed: finished on an end token; bold: the best hypothesis's path. Hover a node for its figures, click it for its text."</p>
                {move || capped().map(|m| view! { <p class="notice" role="status" data-testid="limit-notice">{m}</p> })}
                <tree::TreeView driver=d tree=tree scoring=scoring selected=selected/>
                <panels::Chosen driver=d tree=tree scoring=scoring selected=selected/>
                <panels::Cost tree=tree/>
            </section>
            <section class="panel">
                <panels::Hypotheses driver=d tree=tree scoring=scoring/>
                <panels::Texts driver=d tree=tree scoring=scoring sampled=sampled/>
            </section>
        </div>
    }
}

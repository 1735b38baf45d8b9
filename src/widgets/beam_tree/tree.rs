//! The tree: one column per step, one row per rank (the step's 2·B
//! candidates, best at the top), an edge from each candidate to the beam it
//! extends. Kept candidates solid, pruned ones faded, finished ones boxed;
//! the best hypothesis's path (under the page's length penalty) drawn bold.

use std::collections::HashSet;

use engine::beam::{Fate, Scoring};
use leptos::prelude::*;

use super::search::Tree;
use crate::distribution::visible;
use crate::driver::Driver;
use crate::scroll::Scroll;
use crate::widgets::chart::ChartTable;

/// Layout in SVG units (the figure scrolls sideways).
const COL: f64 = 96.0;
const ROW: f64 = 24.0;
const TOP: f64 = 14.0;
const ROOT_X: f64 = 40.0;
const NODE_W: f64 = 80.0;
/// Characters of a token drawn in its box (the title has all of it).
const LABEL_CHARS: usize = 9;

fn x(step: usize) -> f64 {
    ROOT_X + 40.0 + step as f64 * COL
}

fn y(rank: usize) -> f64 {
    TOP + rank as f64 * ROW + ROW / 2.0
}

fn label(text: &str) -> String {
    let mut out: String = text.chars().take(LABEL_CHARS).collect();
    if text.chars().count() > LABEL_CHARS {
        out.push('…');
    }
    out
}

#[component]
pub fn TreeView(
    driver: Driver,
    tree: RwSignal<Tree>,
    scoring: Signal<Scoring>,
    selected: RwSignal<Option<(usize, usize)>>,
) -> impl IntoView {
    let d = driver;
    move || {
        let t = tree.get();
        let scoring = scoring.get();
        if t.steps.is_empty() {
            return None;
        }
        let best: HashSet<(usize, usize)> = t.best_path(scoring).into_iter().collect();
        let rows = t.steps.iter().map(|s| s.candidates.len()).max().unwrap_or(0);
        let (width, height) = (x(t.steps.len()) + 8.0, TOP * 2.0 + rows as f64 * ROW);
        let root_y = y(0);
        let edges = t.steps.iter().enumerate().flat_map(|(s, step)| {
            let t = &t;
            let best = &best;
            step.candidates.iter().enumerate().map(move |(r, c)| {
                let (px, py) = match s {
                    0 => (ROOT_X + 30.0, root_y),
                    _ => (x(s - 1) + NODE_W, y(t.steps[s - 1].kept[c.parent])),
                };
                let class = match c.fate {
                    Fate::Pruned => "edge pruned",
                    _ if best.contains(&(s, r)) => "edge best",
                    _ => "edge",
                };
                view! { <line class=class x1=format!("{px:.1}") y1=format!("{py:.1}") x2=format!("{:.1}", x(s)) y2=format!("{:.1}", y(r))></line> }
            })
        }).collect_view();
        let nodes = t.steps.iter().enumerate().flat_map(|(s, step)| {
            let t = &t;
            let best = &best;
            step.candidates.iter().enumerate().map(move |(r, c)| {
                let text = visible(&d.lab.with_value(|l| l.token_text(c.token)));
                let fate = match c.fate {
                    Fate::Kept { .. } => "kept",
                    Fate::Finished => "finished",
                    Fate::Pruned => "pruned",
                };
                let score = t.normalised(scoring, s, r);
                let title = format!(
                    "step {}, rank {}: “{text}” ({fate})\nlog p = {:.4}   cumulative = {:.4}   normalised = {:.4}",
                    s + 1, r + 1, c.logprob, c.cumulative, score
                );
                view! {
                    <g class=format!("beam-node {fate}") class:best=best.contains(&(s, r))
                        class:selected=move || selected.get() == Some((s, r))
                        data-testid="beam-node" data-step=s.to_string() data-rank=r.to_string()
                        data-token=c.token.to_string() data-fate=fate data-parent=c.parent.to_string()
                        data-logprob=format!("{:.6}", c.logprob) data-cumulative=format!("{:.6}", c.cumulative)
                        tabindex="0" role="button" aria-label=format!("step {}, rank {}: {text}, {fate}", s + 1, r + 1)
                        on:click=move |_| selected.set(Some((s, r)))
                        on:keydown=move |ev| {
                            if ev.key() == "Enter" || ev.key() == " " {
                                ev.prevent_default();
                                selected.set(Some((s, r)));
                            }
                        }>
                        <title>{title}</title>
                        <rect x=format!("{:.1}", x(s)) y=format!("{:.1}", y(r) - ROW / 2.0 + 2.0) width=NODE_W.to_string() height=(ROW - 4.0).to_string() rx="3"></rect>
                        <text x=format!("{:.1}", x(s) + 4.0) y=format!("{:.1}", y(r) + 4.0)>{label(&text)}</text>
                    </g>
                }
            })
        }).collect_view();
        let table = as_table(d, &t);
        Some(view! {
            <Scroll label="the beam search tree" class="beam-scroll" csv=false>
                <svg class="beam-svg" data-testid="beam-tree" width=format!("{width:.0}") height=format!("{height:.0}")
                    viewBox=format!("0 0 {width:.0} {height:.0}") role="group" aria-label="the beam search tree: Tab to a candidate, Enter to read it">
                    <g class="beam-root"><rect x="2" y=format!("{:.1}", root_y - ROW / 2.0 + 2.0) width=(ROOT_X + 28.0).to_string() height=(ROW - 4.0).to_string() rx="3"></rect>
                        <text x="6" y=format!("{:.1}", root_y + 4.0)>"prompt"</text></g>
                    {edges}
                    {nodes}
                </svg>
            </Scroll>
            {table}
        })
    }
}

/// Every candidate as a table row (the tree's text alternative): where it
/// sits, its token, its fate and its log-probabilities.
fn as_table(d: Driver, t: &Tree) -> impl IntoView {
    let rows = t.steps.iter().enumerate().flat_map(|(s, step)| {
        step.candidates.iter().enumerate().map(move |(r, c)| {
            let fate = match c.fate {
                Fate::Kept { .. } => "kept",
                Fate::Finished => "finished",
                Fate::Pruned => "pruned",
            };
            vec![
                format!("{}", s + 1),
                format!("{}", r + 1),
                visible(&d.lab.with_value(|l| l.token_text(c.token))),
                fate.to_string(),
                format!("{}", c.parent + 1),
                format!("{:.4}", c.logprob),
                format!("{:.4}", c.cumulative),
            ]
        })
    });
    let head = ["step", "rank", "token", "fate", "extends beam", "log p", "cumulative log p"];
    let caption = "every candidate of every step, best first".to_string();
    view! { <ChartTable caption=caption head=head.map(String::from).to_vec() rows=rows.collect()/> }
}

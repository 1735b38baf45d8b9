//! Around the tree: the finished hypotheses ranked under the page's length
//! penalty (re-ranked as it moves, without the model), the chosen node's
//! figures, the search's cost, and the best beam beside a sampled text.

use engine::beam::Scoring;
use leptos::prelude::*;

use super::search::Tree;
use crate::distribution::visible;
use crate::driver::Driver;
use crate::scroll::Scroll;

/// `tokens` as text, the end-of-text token left out.
fn text(d: Driver, t: &Tree, tokens: &[u32]) -> String {
    let kept: Vec<u32> = tokens.iter().copied().filter(|&id| Some(id) != t.eos).collect();
    d.lab.with_value(|l| l.tokenizer.decode(&kept)).unwrap_or_default()
}

/// The finished hypotheses, best first under the page's scoring.
#[component]
pub fn Hypotheses(driver: Driver, tree: RwSignal<Tree>, scoring: Signal<Scoring>) -> impl IntoView {
    let d = driver;
    move || {
        let t = tree.get();
        let scoring = scoring.get();
        let searched = t.settings.as_ref()?.scoring;
        if !t.done {
            return None;
        }
        let rows = t.ranked(scoring).into_iter().enumerate().map(|(place, (i, score))| {
            let h = &t.hypotheses[i];
            let length = scoring.length(h.tokens.len(), t.prompt.len());
            let ids: Vec<String> = h.tokens.iter().map(u32::to_string).collect();
            view! {
                <tr data-testid="beam-hyp" data-tokens=ids.join(",") data-score=format!("{score:.6}") class:best=place == 0>
                    <td>{place + 1}</td>
                    <td class="token">{visible(&text(d, &t, &h.tokens))}</td>
                    <td>{format!("{:.4}", h.logprob)}</td>
                    <td>{length}</td>
                    <td>{format!("{score:.4}")}</td>
                    <td>{if h.ended { "end token" } else { "still live at the last step" }}</td>
                </tr>
            }
        }).collect_view();
        let note = (scoring != searched).then(|| format!(
            "Re-ranked under length penalty {:.1}{} without running the model. The search ran with {:.1}{}: Search again to search with these (they can change when it stops and which hypotheses it keeps).",
            scoring.length_penalty, if scoring.prompt_in_length { ", prompt counted" } else { "" },
            searched.length_penalty, if searched.prompt_in_length { ", prompt counted" } else { "" },
        ));
        Some(view! {
            <h3>"Finished hypotheses"</h3>
            <p class="legend">"Score = log-probability ÷ length^penalty. Length: the new tokens (an end token included), plus the prompt's when it counts."</p>
            {note.map(|n| view! { <p class="readout" data-testid="beam-reranked">{n}</p> })}
            <Scroll label="the finished hypotheses"><table class="figures" data-testid="beam-hyps">
                <thead><tr><th>"#"</th><th>"text"</th><th>"log-prob"</th><th>"length"</th><th>"score"</th><th>"ended at"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table></Scroll>
        })
    }
}

/// The chosen candidate: its path's text and its figures.
#[component]
pub fn Chosen(
    driver: Driver,
    tree: RwSignal<Tree>,
    scoring: Signal<Scoring>,
    selected: RwSignal<Option<(usize, usize)>>,
) -> impl IntoView {
    let d = driver;
    move || {
        let t = tree.get();
        let (s, r) = selected.get()?;
        let c = t.steps.get(s)?.candidates.get(r)?;
        let path = text(d, &t, &t.tokens_to((s, r)));
        Some(view! {
            <p class="readout" data-testid="beam-chosen">
                {format!(
                    "Step {}, rank {} of {}: “{}” — log p = {:.4}, cumulative {:.4}, normalised {:.4}; {}.",
                    s + 1, r + 1, t.steps[s].candidates.len(), visible(&path), c.logprob, c.cumulative,
                    t.normalised(scoring.get(), s, r),
                    match c.fate {
                        engine::beam::Fate::Kept { beam } => format!("kept as beam {}", beam + 1),
                        engine::beam::Fate::Finished => "finished (an end token in the first B)".into(),
                        engine::beam::Fate::Pruned => "pruned".into(),
                    }
                )}
            </p>
        })
    }
}

/// What the search cost: passes, tokens decoded, caches copied.
#[component]
pub fn Cost(tree: RwSignal<Tree>) -> impl IntoView {
    move || {
        let t = tree.get();
        let width = t.settings.as_ref()?.width;
        let c = t.cost;
        let kb = |b: u64| format!("{:.1} KB", b as f64 / 1024.0);
        let share = match c.fork_bytes {
            0 => "nothing to copy".to_string(),
            f => format!("{:.0} % of those bytes", 100.0 * c.kv_bytes_copied as f64 / f as f64),
        };
        Some(view! {
            <p class="readout" data-testid="beam-cost" data-passes=c.passes.to_string() data-decoded=c.decoded.to_string()
                data-copies=c.kv_copies.to_string() data-copy-bytes=c.kv_bytes_copied.to_string() data-fork-bytes=c.fork_bytes.to_string()>
                {format!(
                    "{} forward passes (the prompt's prefill, then one batched step of the B = {width} live beams per step; the last step decodes nothing): {} tokens decoded, {} submits, {:.1} ms. KV caches copied: {} ({}); forking a session for every kept child would copy {} ({}): seating each beam's first child in its parent's cache copies {}.",
                    c.passes, c.decoded, c.submits, c.wall_ms, c.kv_copies, kb(c.kv_bytes_copied), c.fork_copies, kb(c.fork_bytes), share
                )}
            </p>
        })
    }
}

/// The best beam beside the sampled text.
#[component]
pub fn Texts(
    driver: Driver,
    tree: RwSignal<Tree>,
    scoring: Signal<Scoring>,
    sampled: RwSignal<Option<String>>,
) -> impl IntoView {
    let d = driver;
    let best = move || {
        let t = tree.get();
        let (i, _) = *t.ranked(scoring.get()).first()?;
        t.done.then(|| text(d, &t, &t.hypotheses[i].tokens))
    };
    let width = move || tree.with(|t| t.settings.as_ref().map_or(0, |s| s.width));
    let prompt = move || d.prompt.get();
    view! {
        <div class="beam-texts">
            <div class="run">
                <h3>{move || format!("Beam search, B = {}: the best hypothesis", width())}</h3>
                <pre class="output" data-testid="beam-best">{move || best().map(|b| format!("{}{b}", prompt()))}</pre>
            </div>
            <div class="run">
                <h3>"Sampled (the page's temperature, top-k and seed)"</h3>
                <pre class="output" data-testid="beam-sampled">{move || sampled.get().map(|s| format!("{}{s}", prompt()))}</pre>
            </div>
        </div>
    }
}

//! The speculative lesson's figures: each round's drafted tokens (accepted,
//! rejected, or past the first rejection and never checked) and the
//! model's own token after them (its correction, or a bonus when all K
//! were kept); the table of runs; the sentence on where the time went.

use engine::speculate::Round;
use leptos::prelude::*;

use super::measure::{Row, Sinks};
use crate::driver::Driver;
use crate::scroll::FigureTable;

/// One round as chips: kept, the first rejected, the unchecked rest, and the model's token.
fn round(d: Driver, r: &Round) -> impl IntoView {
    // A line break is a token too: shown, not left as an empty chip.
    let text = move |id: u32| d.lab.with_value(|l| l.token_text(id)).replace('\n', "↵");
    let chips = r.drafted.iter().enumerate().map(|(j, &t)| {
        let (class, why) = match j {
            j if j < r.accepted => ("accepted", "drafted and kept"),
            j if j == r.accepted => ("rejected", "drafted, rejected by the model"),
            _ => ("unchecked", "drafted after a rejection: discarded"),
        };
        view! { <span class=format!("spec-chip {class}") title=why data-kind=class>{text(t)}</span> }
    });
    let all_kept = r.accepted == r.drafted.len();
    let (class, why) = match all_kept {
        true => ("bonus", "the model's own token after all K were kept"),
        false => ("correction", "the model's own token in place of the rejected one"),
    };
    view! {
        <li data-testid="spec-round" data-accepted=r.accepted.to_string() data-drafted=r.drafted.len().to_string()>
            {chips.collect_view()}
            <span class=format!("spec-chip {class}") title=why data-kind=class>{text(r.token)}</span>
        </li>
    }
}

#[component]
pub fn Rounds(driver: Driver, sinks: Sinks) -> impl IntoView {
    let d = driver;
    move || {
        let rounds = sinks.rounds.get();
        (!rounds.is_empty()).then(|| {
            let items = rounds.iter().map(|r| round(d, r)).collect_view();
            view! {
                <h3>"Each round of the last run"</h3>
                <p class="legend spec-key">
                    "Round by round: "<span class="spec-chip accepted">"kept"</span>
                    <span class="spec-chip rejected">"rejected"</span>
                    <span class="spec-chip unchecked">"discarded after a rejection"</span>
                    <span class="spec-chip correction">"the model's correction"</span>
                    <span class="spec-chip bonus">"the model's bonus token"</span>
                </p>
                <ol class="spec-rounds" start="0">{items}</ol>
            }
        })
    }
}

#[component]
pub fn Text(sinks: Sinks) -> impl IntoView {
    move || {
        let text = sinks.text.get();
        (!text.is_empty()).then(|| {
            view! {
                <h3>"The last run's text"</h3>
                <p class="spec-text" data-testid="spec-text">{text}</p>
            }
        })
    }
}

fn same(row: &Row) -> (&'static str, &'static str) {
    match row.same_text {
        Some(true) => ("ok", "✓ the model's own"),
        Some(false) => ("bad", "✗ differs"),
        None => ("", "sampled: same distribution, other draws"),
    }
}

#[component]
pub fn Table(sinks: Sinks) -> impl IntoView {
    let rows = move || {
        sinks
            .rows
            .get()
            .into_iter()
            .map(|r| {
                let (class, words) = same(&r);
                view! {
                    <tr data-testid="spec-row" data-k=r.k.to_string() data-same=r.same_text.map(|s| s.to_string())>
                        <td>{r.k}</td>
                        <td>{r.layers}</td>
                        <td>{format!("{:.3}", r.acceptance)}</td>
                        <td>{format!("{:.2}", r.tokens_per_pass)}</td>
                        <td>{format!("{:.2}", r.expected())}</td>
                        <td>{format!("{} / {}", r.target_passes, r.draft_passes)}</td>
                        <td>{format!("{:.2}", r.plain_ms / r.plain_tokens.max(1) as f64)}</td>
                        <td>{format!("{:.2}", r.spec_ms / r.spec_tokens.max(1) as f64)}</td>
                        <td data-testid="spec-speedup">{format!("{:.2}×", r.speedup())}</td>
                        <td class=class>{words}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <FigureTable label="each speculative run" testid="spec-table" caption="Speculative decoding against the model alone on the same prompt, settings and seed, on this page's engine." columns=&["K", "draft blocks", "α (kept / judged)", "tokens per model pass", "expected from α: (1 − α^(K+1)) / (1 − α)", "model / draft passes", "ms per token, alone", "ms per token, speculative", "measured speed-up", "text"]>{rows}</FigureTable>
    }
}

/// Where a round's time went: the speed-up is tokens per round times a plain
/// token's time over a round's time, and a round pays K draft passes.
#[component]
pub fn Verdict(sinks: Sinks) -> impl IntoView {
    move || {
        let r = sinks.rows.get().last()?.clone();
        let round_ms = r.spec_ms / r.rounds.max(1) as f64;
        let plain = r.plain_ms / r.plain_tokens.max(1) as f64;
        let per_round = r.spec_tokens as f64 / r.rounds.max(1) as f64;
        let why = match r.speedup() >= 1.0 {
            true => "the kept drafts pay for the draft's passes here",
            false => "below 1: the draft's K passes and the model's pass over K + 1 rows cost more than the tokens they save; a draft pays off when it is much cheaper than the model and agrees with it often",
        };
        Some(view! {
            <p class="verdict" data-testid="spec-verdict">{format!(
                "K = {}: a round took {round_ms:.2} ms ({} draft passes of {} blocks, one model pass over up to {} rows) and gave {per_round:.2} tokens; a token alone took {plain:.2} ms. Speed-up = {per_round:.2} × {plain:.2} / {round_ms:.2} = {:.2}× — {why}.",
                r.k, r.k, r.layers, r.k + 1, r.speedup()
            )}</p>
        })
    }
}

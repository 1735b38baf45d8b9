//! The serving lesson's table (one row per scheduler: throughput, time to
//! first token and end-to-end latency, utilisation, wasted slot-steps) and
//! every request's text with its check against its run alone.

use engine::serve::Spread;
use leptos::prelude::*;

use super::measure::Sinks;

use crate::scroll::FigureTable;

fn spread(s: Spread, digits: usize) -> String {
    format!("{:.d$} / {:.d$} / {:.d$}", s.mean, s.p50, s.p95, d = digits)
}

#[component]
pub fn Table(sinks: Sinks) -> impl IntoView {
    let rows = move || {
        sinks
            .served
            .get()
            .into_iter()
            .filter_map(|s| {
                let f = s.figures?;
                let ok = s.texts.iter().all(|t| t.1);
                Some(view! {
                    <tr data-testid="serve-row" data-scheduler=s.name>
                        <th scope="row">{s.name}</th>
                        <td>{format!("{:.1}", f.tokens_per_s)}</td>
                        <td>{f.steps}</td>
                        <td>{spread(f.ttft_steps, 1)}</td>
                        <td>{spread(f.ttft_ms, 0)}</td>
                        <td>{spread(f.e2e_steps, 1)}</td>
                        <td>{spread(f.e2e_ms, 0)}</td>
                        <td>{format!("{:.0} % of {}", f.utilisation * 100.0, s.replay.cells.first().map_or(0, Vec::len))}</td>
                        <td>{f.wasted}</td>
                        <td class=if ok { "ok" } else { "bad" }>{if ok { "✓ all" } else { "✗ some differ" }}</td>
                    </tr>
                })
            })
            .collect_view()
    };
    view! {
        <FigureTable label="each scheduler's figures" testid="serve-table" caption="Each scheduler on the same trace, measured on this page's engine. Latencies count from the start of the step a request arrives in: mean / p50 / p95." columns=&["scheduler", "tokens/s", "steps", "first token, steps", "first token, ms", "end to end, steps", "end to end, ms", "slot utilisation", "wasted slot-steps", "texts vs run alone"]>{rows}</FigureTable>
    }
}

#[component]
pub fn Texts(sinks: Sinks) -> impl IntoView {
    move || {
        let trace = sinks.trace.get();
        let served = sinks.served.get();
        let last = served.iter().rev().find(|s| s.figures.is_some())?.clone();
        let items = last
            .texts
            .iter()
            .zip(&trace.requests)
            .enumerate()
            .map(|(i, ((text, ok), r))| {
                let prompt = trace.prompts.get(r.prompt).cloned().unwrap_or_default();
                view! {
                    <li data-testid="serve-text" data-same=ok.to_string()>
                        <span class=if *ok { "ok" } else { "bad" }>{if *ok { "✓ " } else { "✗ " }}</span>
                        <b>{format!("request {i} (step {}, seed {}): ", r.arrival, r.seed)}</b>
                        <span class="prompt">{prompt}</span><span class="text">{text.clone()}</span>
                    </li>
                }
            })
            .collect_view();
        Some(view! {
            <h3>{format!("Every request as {} served it, checked against its run alone", last.name)}</h3>
            <ol class="batch-texts serve-texts" start="0">{items}</ol>
        })
    }
}

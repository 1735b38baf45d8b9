//! The batching lesson's figures: the table of batch sizes, the throughput
//! and latency curves, the texts with their checks, the matrix experiment
//! and the sentence on what dominates a step here.

use leptos::prelude::*;

use super::measure::{Parts, Row, Sinks};
use crate::widgets::chart::{LineChart, Series};

fn series(name: &str, class: &'static str, points: Vec<(f64, f64)>) -> Series {
    Series { name: name.into(), class, points, fit: None }
}

#[component]
pub fn Table(sinks: Sinks) -> impl IntoView {
    let rows = move || {
        sinks.rows.get().into_iter().map(|r| {
            let n = r.n_steps.max(1) as f64;
            let ok = r.texts.iter().all(|t| t.1);
            view! {
                <tr data-testid="batch-row">
                    <td>{r.size}</td>
                    <td>{format!("{:.1}", r.alone_tps)}</td>
                    <td>{format!("{:.1}", r.batched_tps)}</td>
                    <td>{format!("{:.2}×", r.batched_tps / r.alone_tps)}</td>
                    <td>{format!("{:.2}", r.step_ms)}</td>
                    <td>{format!("{:.0} / {:.0}", r.steps.dispatches as f64 / n, r.steps.submits as f64 / n)}</td>
                    <td class=if ok { "ok" } else { "bad" }>{if ok { "✓ same text" } else { "✗ differs" }}</td>
                </tr>
            }
        }).collect_view()
    };
    view! {
        <div class="table-scroll"><table class="figures" data-testid="batch-table">
            <thead><tr>
                <th>"B"</th><th>"one after another, tokens/s"</th><th>"batched, tokens/s"</th>
                <th>"speed-up"</th><th>"ms per batched step"</th><th>"dispatches / submits per step"</th><th>"texts"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></div>
    }
}

#[component]
pub fn Curves(sinks: Sinks) -> impl IntoView {
    let throughput = Signal::derive(move || {
        let rows = sinks.rows.get();
        let pts = |f: fn(&Row) -> f64| rows.iter().map(|r| (r.size as f64, f(r))).collect();
        vec![
            series("batched", "batched", pts(|r| r.batched_tps)),
            series("one after another", "alone", pts(|r| r.alone_tps)),
        ]
    });
    // Each point is one B: what a reader waits per token against what the device delivers.
    let trade = Signal::derive(move || {
        let rows = sinks.rows.get();
        vec![series(
            "batched step",
            "batched",
            rows.iter().map(|r| (r.batched_tps, r.step_ms)).collect(),
        )]
    });
    view! {
        <div class="charts">
            <LineChart series=throughput x_label="sequences in the batch (B)" y_label="tokens/s, all sequences" testid="batch-throughput"/>
            <LineChart series=trade x_label="tokens/s, all sequences" y_label="ms per step (each sequence waits this per token)" testid="batch-latency"/>
        </div>
    }
}

#[component]
pub fn Texts(sinks: Sinks) -> impl IntoView {
    move || {
        sinks.rows.get().last().map(|r| {
            let items = r.texts.iter().enumerate().map(|(i, (t, ok))| {
                view! {
                    <li data-testid="batch-text" data-same=ok.to_string()>
                        <span class=if *ok { "ok" } else { "bad" }>{if *ok { "✓ " } else { "✗ " }}</span>
                        <b>{format!("seed + {i}: ")}</b>
                        <span class="text">{t.clone()}</span>
                    </li>
                }
            }).collect_view();
            view! {
                <h3>{format!("The {} continuations of the largest batch, each checked against its run alone", r.size)}</h3>
                <ol class="batch-texts">{items}</ol>
            }
        })
    }
}

#[component]
pub fn Passes(sinks: Sinks) -> impl IntoView {
    let rows = move || {
        let passes = sinks.passes.get();
        let first = passes.first().map(|p| p.1).unwrap_or(1.0);
        passes.into_iter().map(|(n, ms)| view! {
            <tr data-testid="pass-row"><td>{n}</td><td>{format!("{ms:.3}")}</td><td>{format!("{:.1}×", first / ms)}</td></tr>
        }).collect_view()
    };
    view! {
        <table class="figures" data-testid="pass-table">
            <thead><tr><th>"vectors per pass"</th><th>"ms per vector"</th><th>"cheaper than one at a time"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// One sentence: which term dominates a step on this device.
fn verdict(p: &Parts, one: &Row, eight: Option<&Row>) -> String {
    let mb = p.weight_bytes as f64 / 1e6;
    let n = one.n_steps.max(1) as f64;
    let speedup = eight.map_or(String::new(), |e| {
        format!(" (B = {}: ×{:.2})", e.size, e.batched_tps / e.alone_tps)
    });
    if let Some(gpu) = one.steps.gpu_ms {
        let (busy, wall) = (gpu / n, one.steps.wall_ms / n);
        return format!(
            "One step reads {mb:.1} MB of weights in {:.0} dispatches. The GPU was busy {busy:.2} ms of the {wall:.2} ms step ({:.1} GB/s of weights while busy); the other {:.2} ms is submitting, waiting and reading back — {} dominates here, and a batch shares it{speedup}.",
            one.steps.dispatches as f64 / n,
            p.weight_bytes as f64 / (busy / 1e3) / 1e9,
            wall - busy,
            if wall - busy > busy { "the per-step overhead" } else { "the GPU's own work" },
        );
    }
    match p.copy_rate {
        Some(rate) => {
            let read_ms = p.weight_bytes as f64 / rate * 1e3;
            format!(
                "One step reads {mb:.1} MB of weights; at this device's measured copy rate ({:.1} GB/s) that takes {read_ms:.2} ms of the {:.2} ms step — {}{speedup}.",
                rate / 1e9,
                one.step_ms,
                if read_ms < one.step_ms / 2.0 {
                    "arithmetic dominates (the weights stay in the cache), so each extra sequence adds nearly its own arithmetic and batching gains less than the weights alone would suggest"
                } else {
                    "reading the weights dominates, and a batch reads them once for every sequence"
                },
            )
        }
        None => format!("One step reads {mb:.1} MB of weights in {:.0} dispatches; this adapter has no timestamp queries, so its share of the {:.2} ms step is not measured{speedup}.", one.steps.dispatches as f64 / n, one.step_ms),
    }
}

#[component]
pub fn Decomposition(sinks: Sinks) -> impl IntoView {
    move || {
        let parts = sinks.parts.get()?;
        let rows = sinks.rows.get();
        let one = rows.first()?;
        Some(
            view! { <p class="verdict" data-testid="batch-verdict">{verdict(&parts, one, rows.last())}</p> },
        )
    }
}

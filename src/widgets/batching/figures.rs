//! The batching lesson's figures: the table of batch sizes, the throughput
//! and latency curves, the texts with their checks, the matrix experiment
//! and the sentence on what dominates a step here.

use leptos::prelude::*;

use super::measure::{Parts, Row, Sinks};
use crate::scroll::FigureTable;
use crate::widgets::chart::{LineChart, Series};
use crate::widgets::measuring::bandwidth_sentence;

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
        <FigureTable label="each batch size's figures" testid="batch-table" columns=&["B", "one after another, tokens/s", "batched, tokens/s", "speed-up", "ms per batched step", "dispatches / submits per step", "texts"]>{rows}</FigureTable>
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

/// One sentence: which term dominates a step on this device, from the
/// B = 1 batched step, the weight bytes at the measured read rate and the
/// dispatches at the measured cost of one.
fn verdict(p: &Parts, one: &Row, largest: Option<&Row>) -> String {
    let n = one.n_steps.max(1) as f64;
    let mb = p.weight_bytes as f64 / 1e6;
    let rate = p.device.read_bytes_per_s;
    let read_ms = p.weight_bytes as f64 / rate * 1e3;
    let dispatches = one.steps.dispatches as f64 / n;
    let dispatch_ms = p.device.dispatch_ms.map(|d| d * dispatches);
    let step = one.step_ms;
    let rest = (step - read_ms - dispatch_ms.unwrap_or(0.0)).max(0.0);
    let mut terms = vec![("reading the weights", read_ms), ("arithmetic and waiting", rest)];
    let dispatch_part = match (p.device.dispatch_ms, dispatch_ms) {
        (Some(each), Some(total)) => {
            terms.push(("the dispatches", total));
            format!(", its {dispatches:.0} dispatches at {:.3} ms each about {total:.2} ms", each)
        }
        _ => String::new(),
    };
    let gpu = one
        .steps
        .gpu_ms
        .map_or(String::new(), |g| format!(" (the GPU itself was busy {:.2} ms of it)", g / n));
    let top = terms.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or("", |t| t.0);
    let speedup = largest.map_or(String::new(), |r| {
        format!(
            " A batch of {} shares the weights and the dispatches: ×{:.2} here.",
            r.size,
            r.batched_tps / r.alone_tps
        )
    });
    format!(
        "One step (B = 1) takes {step:.2} ms{gpu}: reading its {mb:.1} MB of weights at this device's measured read rate ({:.1} GB/s: a kernel that only reads a large buffer) accounts for about {read_ms:.2} ms{dispatch_part}; the rest, {rest:.2} ms, is arithmetic and waiting — {top} dominates here.{speedup}",
        rate / 1e9,
    )
}

#[component]
pub fn Decomposition(sinks: Sinks) -> impl IntoView {
    move || {
        let parts = sinks.parts.get()?;
        let rows = sinks.rows.get();
        let one = rows.first()?;
        // The B = 1 step's share of the read rate: its median time, its reads.
        let n = one.n_steps.max(1) as f64;
        let gpu_ms = one.steps.gpu_ms.map(|g| g / n);
        let step = engine::StepStats { wall_ms: one.step_ms, gpu_ms, ..Default::default() };
        let bytes = (parts.weight_bytes + parts.kv_bytes) as f64;
        let line = bandwidth_sentence(&[step], bytes, &parts.device);
        Some(view! {
            <p class="verdict" data-testid="batch-verdict">{verdict(&parts, one, rows.last())}</p>
            {line.map(|l| view! { <p class="verdict" data-testid="bandwidth">{l}</p> })}
        })
    }
}

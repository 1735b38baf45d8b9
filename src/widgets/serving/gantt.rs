//! The serving lesson's pictures: the trace on a timeline (one mark per
//! request at the step it arrives) and, per scheduler, slots × steps as a
//! Gantt chart whose cells say what each slot did at each step: a
//! newcomer's prefill, a decode step, idle, or held empty by a static batch.

use engine::serve::trace::Request;
use engine::serve::Cell;
use leptos::prelude::*;

use super::measure::{Served, Sinks};
use crate::scroll::Scroll;
use crate::widgets::chart::ChartTable;

/// One step's width and one slot's height, in SVG units.
const STEP: f64 = 12.0;
const ROW: f64 = 16.0;
/// Room for the row labels.
const LEFT: f64 = 56.0;

/// A cell's class (its colour) and its words (its tooltip).
fn cell_class(cell: Cell) -> (&'static str, String) {
    match cell {
        Cell::Idle => ("idle", "idle".into()),
        Cell::Prefill(r) => ("prefill", format!("request {r}: its prompt prefilled")),
        Cell::Decode(r) => ("decode", format!("request {r}: one token")),
        Cell::Wasted => ("wasted", "held for a static batch, its request finished: wasted".into()),
    }
}

/// The number of steps the widest chart needs (so all share one scale).
fn steps_shown(trace: &[Request], served: &[Served]) -> usize {
    let arrivals = trace.iter().map(|r| r.arrival + 1).max().unwrap_or(0);
    served.iter().map(|s| s.replay.cells.len()).chain([arrivals]).max().unwrap_or(0)
}

#[component]
pub fn Timeline(sinks: Sinks) -> impl IntoView {
    move || {
        let trace = sinks.trace.get().requests;
        let steps = steps_shown(&trace, &sinks.served.get());
        (!trace.is_empty()).then(|| {
            let width = LEFT + STEP * steps as f64 + 4.0;
            let table = arrivals_table(&trace);
            let marks = trace
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let x = LEFT + STEP * r.arrival as f64 + STEP / 2.0;
                    let same_step = trace[..i].iter().filter(|o| o.arrival == r.arrival).count();
                    let y = 12.0 + 10.0 * same_step as f64;
                    let words = format!(
                        "request {i} arrives at step {}: prompt {}, up to {} tokens, seed {}",
                        r.arrival, r.prompt, r.max_tokens, r.seed
                    );
                    view! {
                        <g class="arrival" data-testid="arrival">
                            <line x1=format!("{x:.1}") y1="0" x2=format!("{x:.1}") y2=format!("{y:.1}")></line>
                            <text x=format!("{:.1}", x + 2.0) y=format!("{y:.1}")>{i.to_string()}</text>
                            <title>{words}</title>
                        </g>
                    }
                })
                .collect_view();
            let most = trace.iter().map(|r| trace.iter().filter(|o| o.arrival == r.arrival).count());
            let height = 16.0 + 10.0 * most.max().unwrap_or(1) as f64;
            view! {
                <figure class="serve-timeline" data-testid="serve-timeline">
                    <Scroll label="the trace: when each request arrives" class="gantt-scroll" csv=false>
                    <svg viewBox=format!("0 0 {width:.0} {height:.0}") width=format!("{width:.0}") role="img"
                        aria-label=format!("{} requests arriving over {} steps", trace.len(), steps)>
                        <text class="tick" x="0" y="12">"arrivals"</text>
                        {marks}
                    </svg>
                    </Scroll>
                    {table}
                </figure>
            }
        })
    }
}

/// One scheduler's slots × steps.
fn chart(s: &Served, steps: usize) -> impl IntoView {
    let slots = s.replay.cells.first().map_or(0, Vec::len);
    let width = LEFT + STEP * steps as f64 + 4.0;
    let height = ROW * slots as f64 + 14.0;
    let cells = s.replay.cells.iter().enumerate().flat_map(|(step, row)| {
        row.iter().enumerate().map(move |(slot, &cell)| {
            let (class, words) = cell_class(cell);
            let (x, y) = (LEFT + STEP * step as f64, ROW * slot as f64);
            let label = match cell {
                Cell::Prefill(r) | Cell::Decode(r) => Some(r.to_string()),
                _ => None,
            };
            view! {
                <g class=format!("cell {class}")>
                    <rect x=format!("{x:.1}") y=format!("{y:.1}") width=(STEP - 1.0).to_string() height=(ROW - 1.0).to_string()></rect>
                    {label.map(|l| view! { <text x=format!("{:.1}", x + STEP / 2.0) y=format!("{:.1}", y + ROW - 5.0) text-anchor="middle">{l}</text> })}
                    <title>{format!("step {step}, slot {slot}: {words}")}</title>
                </g>
            }
        })
    });
    let cells = cells.collect_view();
    let labels = (0..slots)
        .map(|slot| {
            let y = ROW * slot as f64 + ROW - 4.0;
            view! { <text class="tick" x="0" y=format!("{y:.1}")>{format!("slot {slot}")}</text> }
        })
        .collect_view();
    let n_steps = s.replay.cells.len();
    let axis = format!("steps 0 – {}", n_steps.saturating_sub(1));
    let name = s.name;
    view! {
        <figure class="gantt" data-testid="gantt" data-scheduler=s.name>
            <figcaption>{s.name}</figcaption>
            <Scroll label=format!("{name}: slots by steps") class="gantt-scroll" csv=false>
                <svg viewBox=format!("0 0 {width:.0} {height:.0}") width=format!("{width:.0}") role="img"
                    aria-label=format!("{name}: {slots} slots over {n_steps} steps")>
                    {labels}
                    {cells}
                    <text class="tick" x=LEFT.to_string() y=(height - 2.0).to_string()>{axis}</text>
                </svg>
            </Scroll>
            {as_table(s)}
        </figure>
    }
}

/// The chart's cells as a table (its text alternative): a row per step, a
/// column per slot.
fn as_table(s: &Served) -> impl IntoView {
    let slots = s.replay.cells.first().map_or(0, Vec::len);
    let head = std::iter::once("step".to_string()).chain((0..slots).map(|n| format!("slot {n}")));
    let rows = s.replay.cells.iter().enumerate().map(|(step, row)| {
        let cells = row.iter().map(|&cell| match cell {
            Cell::Idle => "idle".to_string(),
            Cell::Prefill(r) => format!("prefill {r}"),
            Cell::Decode(r) => format!("decode {r}"),
            Cell::Wasted => "wasted".to_string(),
        });
        std::iter::once(step.to_string()).chain(cells).collect()
    });
    let caption =
        format!("{}: what each slot did at each step (the number is the request)", s.name);
    view! { <ChartTable caption=caption head=head.collect() rows=rows.collect()/> }
}

#[component]
pub fn Gantts(sinks: Sinks) -> impl IntoView {
    move || {
        let served = sinks.served.get();
        let steps = steps_shown(&sinks.trace.get().requests, &served);
        let charts = served.iter().map(|s| chart(s, steps)).collect_view();
        (!served.is_empty()).then(|| {
            view! {
                <p class="legend gantt-key">
                    <span class="key prefill">"prefill (a newcomer's prompt)"</span>
                    <span class="key decode">"decode (one token)"</span>
                    <span class="key idle">"idle"</span>
                    <span class="key wasted">"held, wasted"</span>
                    " — each cell is one slot at one step; the number is the request."
                </p>
                {charts}
            }
        })
    }
}

/// The trace as a table (the timeline's text alternative).
fn arrivals_table(trace: &[Request]) -> impl IntoView {
    let rows = trace.iter().enumerate().map(|(i, r)| {
        [i, r.arrival, r.prompt, r.max_tokens]
            .map(|v| v.to_string())
            .into_iter()
            .chain([r.seed.to_string()])
            .collect()
    });
    let head = ["request", "arrives at step", "prompt", "max tokens", "seed"];
    let caption = "the trace: when each request arrives, and what it asks".to_string();
    view! { <ChartTable caption=caption head=head.map(String::from).to_vec() rows=rows.collect()/> }
}

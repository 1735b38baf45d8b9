//! One generation drawn as it happened: the prompt's pass as one bar, then
//! one bar per decode step, widths in milliseconds on a shared axis — the
//! cold run and the last warm run in two lanes, so the first call's extra
//! cost shows against the same scale. Hovering a bar gives its figures.

use engine::lessons::cost::Timeline;
use engine::StepStats;
use leptos::prelude::*;

use super::measure::Sinks;
use crate::widgets::chart::ChartTable;

const WIDTH: f64 = 600.0;
const LANE: f64 = 26.0;
const LABEL: f64 = 48.0;

/// The hover text of one call.
fn figures(what: &str, s: &StepStats) -> String {
    let gpu = s.gpu_ms.map_or(String::new(), |g| format!(" ({g:.2} ms on the GPU)"));
    format!(
        "{what}: {:.2} ms{gpu}, {} token{}, {} dispatches, {} submit{}, {} B written, {} B read",
        s.wall_ms,
        s.tokens,
        if s.tokens == 1 { "" } else { "s" },
        s.dispatches,
        s.submits,
        if s.submits == 1 { "" } else { "s" },
        s.bytes_written,
        s.bytes_read
    )
}

/// One lane: `timeline` at `scale` SVG units per millisecond.
fn lane(name: &'static str, t: &Timeline, y: f64, scale: f64, by_token: bool) -> impl IntoView {
    let prefill_what = if by_token { "prompt, token by token" } else { "prefill (one pass)" };
    let mut x = LABEL;
    let mut bars = Vec::with_capacity(t.decode.len() + 1);
    let calls = std::iter::once(("prefill", prefill_what.to_string(), &t.prefill)).chain(
        t.decode.iter().enumerate().map(|(i, s)| ("decode", format!("decode step {}", i + 1), s)),
    );
    for (kind, what, stats) in calls {
        let w = (stats.wall_ms * scale).max(0.5);
        bars.push(view! {
            <rect class=kind data-testid="timeline-bar" data-kind=kind data-ms=format!("{:.3}", stats.wall_ms)
                x=format!("{x:.2}") y=format!("{y:.1}") width=format!("{:.2}", (w - 0.4).max(0.4)) height=(LANE - 6.0).to_string()>
                <title>{figures(&what, stats)}</title>
            </rect>
        });
        x += w;
    }
    view! {
        <g class="lane" data-lane=name>
            <text class="tick" x="0" y=format!("{:.1}", y + LANE / 2.0)>{name}</text>
            {bars}
        </g>
    }
}

#[component]
pub fn TimelineChart(sinks: Sinks) -> impl IntoView {
    move || {
        let runs = sinks.runs.get();
        let cold = runs.first()?;
        let warm = runs.get(1..).and_then(|w| w.last());
        let longest = runs.iter().map(|r| r.timeline.total_ms()).fold(0.0, f64::max).max(1e-3);
        let scale = (WIDTH - LABEL) / longest;
        let lanes = [Some(("cold", cold)), warm.map(|w| ("warm", w))];
        let drawn = lanes
            .into_iter()
            .flatten()
            .enumerate()
            // A run that also timed the one-pass prefill fed its prompt token by token.
            .map(|(i, (name, r))| {
                lane(name, &r.timeline, i as f64 * LANE, scale, r.one_pass.is_some())
            })
            .collect_view();
        let table =
            as_table(&lanes.iter().flatten().map(|(n, r)| (*n, &r.timeline)).collect::<Vec<_>>());
        Some(view! {
            <figure class="timeline" data-testid="timeline">
                <svg viewBox=format!("0 0 {WIDTH} {}", 2.0 * LANE + 14.0) role="img" aria-label="one generation, call by call">
                    {drawn}
                    <text class="tick" x=LABEL.to_string() y=(2.0 * LANE + 12.0).to_string()>"0 ms"</text>
                    <text class="tick" x=WIDTH.to_string() y=(2.0 * LANE + 12.0).to_string() text-anchor="end">{format!("{longest:.1} ms")}</text>
                </svg>
                <figcaption class="legend">
                    <span class="key prefill">"the prompt's pass"</span>" "<span class="key decode">"one decode step per new token"</span>
                    " — widths are wall time; hover a bar for its dispatches, submits and bytes."
                </figcaption>
                {table}
            </figure>
        })
    }
}

/// The lanes as a table (their text alternative): one row per call of each
/// lane, with the figures its bar's tooltip gives.
fn as_table(lanes: &[(&'static str, &Timeline)]) -> impl IntoView {
    let rows = lanes.iter().flat_map(|&(name, t)| {
        let calls = std::iter::once(("prefill".to_string(), &t.prefill))
            .chain(t.decode.iter().enumerate().map(|(i, s)| (format!("decode {}", i + 1), s)));
        calls.map(move |(what, s)| {
            let gpu = s.gpu_ms.map_or(String::new(), |g| format!("{g:.3}"));
            vec![
                format!("{name}: {what}"),
                format!("{:.3}", s.wall_ms),
                gpu,
                s.tokens.to_string(),
                s.dispatches.to_string(),
                s.submits.to_string(),
            ]
        })
    });
    let head = ["call", "wall ms", "GPU ms", "tokens", "dispatches", "submits"];
    let caption = "one generation, call by call".to_string();
    view! { <ChartTable caption=caption head=head.map(String::from).to_vec() rows=rows.collect()/> }
}

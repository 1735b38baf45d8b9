//! The top-p chart: the probabilities entering top-p sorted from most to least
//! likely, their cumulative sum as a curve, and a horizontal line at p that
//! can be dragged. The nucleus is every bar left of where the curve first
//! reaches the line (that token included), exactly as the pipeline cuts it.

use std::sync::Arc;

use engine::sample::{Explanation, StageKind};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::chart::ChartTable;
use crate::distribution::Explained;

/// Chart size in SVG units (it scales to its box).
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 220.0;
/// Most bars drawn: past this the tail is one sliver of the curve anyway.
const MAX_BARS: usize = 512;

/// What the chart draws, from one explanation.
#[derive(Clone, Debug, PartialEq)]
struct Sorted {
    /// (shown) probabilities entering top-p, descending.
    probs: Vec<f64>,
    /// (shown) running sum of `probs`.
    cumulative: Vec<f64>,
    /// How many tokens top-p keeps.
    kept: usize,
}

fn sorted(e: &Explanation) -> Option<Sorted> {
    let before = e.stage(StageKind::TopK);
    let after = e.stage(StageKind::TopP);
    let mut probs: Vec<f64> = before.probs.iter().copied().filter(|&p| p > 0.0).collect();
    probs.sort_by(|a, b| b.total_cmp(a));
    let kept = after.kept_count;
    let mut cumulative = Vec::with_capacity(probs.len());
    let mut sum = 0.0;
    for &p in &probs {
        sum += p;
        cumulative.push(sum);
    }
    // Enough bars to show the nucleus and where the curve flattens out.
    let flat = cumulative.iter().position(|&c| c >= 0.995).map_or(probs.len(), |i| i + 1);
    let shown = flat.max(kept + 5).min(probs.len()).min(MAX_BARS);
    probs.truncate(shown);
    cumulative.truncate(shown);
    Some(Sorted { probs, cumulative, kept })
}

/// The chart; dragging on it sets `top_p` (the number box follows).
#[component]
pub fn NucleusChart(explanation: Explained, top_p: RwSignal<f64>) -> impl IntoView {
    let data = Memo::new(move |_| Some(Arc::new(sorted(&*explanation.get()?.ok()?)?)));
    let dragging = RwSignal::new(false);
    let set_from = move |ev: &web_sys::PointerEvent| {
        let Some(el) = ev.current_target().and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        let rect = el.get_bounding_client_rect();
        if rect.height() > 0.0 {
            let p = 1.0 - (ev.client_y() as f64 - rect.top()) / rect.height();
            top_p.set((p.clamp(0.0, 1.0) * 100.0).round() / 100.0);
        }
    };
    let y = |p: f64| HEIGHT * (1.0 - p);
    view! {
        {move || data.get().map(|d| {
            let n = d.probs.len().max(1) as f64;
            let w = WIDTH / n;
            let p_max = d.probs.first().copied().unwrap_or(1.0).max(1e-12);
            let bars = d.probs.iter().enumerate().map(|(i, &p)| {
                let h = HEIGHT * 0.95 * p / p_max;
                view! {
                    <rect class:kept=i < d.kept x=format!("{:.2}", i as f64 * w) y=format!("{:.2}", HEIGHT - h)
                        width=format!("{:.2}", (w * 0.85).max(0.5)) height=format!("{h:.2}")></rect>
                }
            }).collect_view();
            let curve: Vec<String> = d.cumulative.iter().enumerate()
                .map(|(i, &c)| format!("{:.2},{:.2}", (i as f64 + 1.0) * w, y(c)))
                .collect();
            let curve = format!("0,{HEIGHT} {}", curve.join(" "));
            let cross = d.kept.min(d.probs.len()) as f64 * w;
            let shown = d.probs.len();
            let kept = d.kept;
            view! {
                <figure class="nucleus">
                    <svg data-testid="nucleus" data-kept-count=kept.to_string() data-shown=shown.to_string()
                        viewBox=format!("0 0 {WIDTH} {HEIGHT}") preserveAspectRatio="none"
                        role="slider" aria-label="top-p" aria-valuemin="0" aria-valuemax="1"
                        aria-valuenow=move || top_p.get().to_string()
                        on:pointerdown=move |ev| {
                            dragging.set(true);
                            if let Some(el) = ev.current_target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) {
                                let _ = el.set_pointer_capture(ev.pointer_id());
                            }
                            set_from(&ev);
                        }
                        on:pointermove=move |ev| if dragging.get_untracked() { set_from(&ev) }
                        on:pointerup=move |_| dragging.set(false)
                        on:pointercancel=move |_| dragging.set(false)>
                        <g class="sorted-bars">{bars}</g>
                        <rect class="nucleus-span" x="0" y="0" width=format!("{cross:.2}") height=HEIGHT.to_string()></rect>
                        <polyline class="cumulative" points=curve></polyline>
                        <line class="p-line" data-testid="p-line" data-p=move || top_p.get().to_string()
                            x1="0" x2=WIDTH.to_string()
                            y1=move || format!("{:.2}", y(top_p.get())) y2=move || format!("{:.2}", y(top_p.get()))></line>
                    </svg>
                    {as_table(&d)}
                    <figcaption>
                        {move || format!("p = {:.2}: the nucleus is the {kept} most likely token{} (shaded); ", top_p.get(), if kept == 1 { "" } else { "s" })}
                        {format!("bars are scaled to the top token; the curve is their running sum (0 to 1), {shown} tokens drawn. Drag up or down to move p.")}
                    </figcaption>
                </figure>
            }
        })}
    }
}

/// The chart as a table (its text alternative): each drawn token's rank,
/// probability, running sum, and whether the nucleus keeps it.
fn as_table(d: &Sorted) -> impl IntoView {
    let rows = d.probs.iter().zip(&d.cumulative).enumerate().map(|(i, (p, c))| {
        let kept = if i < d.kept { "kept" } else { "cut" };
        vec![(i + 1).to_string(), format!("{p:.4}"), format!("{c:.4}"), kept.to_string()]
    });
    let head = ["rank", "probability", "running sum", "top-p"].map(String::from).to_vec();
    let caption = "the tokens entering top-p, most likely first".to_string();
    view! { <ChartTable caption=caption head=head rows=rows.collect()/> }
}

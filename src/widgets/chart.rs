//! A measured curve: a few series of (x, y) points on shared axes from 0,
//! each with its points joined and, when given, its fitted polynomial drawn
//! dashed. The cost lessons draw time against length with it.

use engine::lessons::cost::Fit;
use leptos::prelude::*;

use crate::png::CopyPng;

/// Chart size in SVG units (it scales to its box).
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 240.0;
/// Room for the axis labels.
const LEFT: f64 = 52.0;
const BOTTOM: f64 = 22.0;

/// One series: its name in the legend, its CSS class (colour), its points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub class: &'static str,
    pub points: Vec<(f64, f64)>,
    pub fit: Option<Fit>,
}

/// `v` in a few significant figures, for axis ends.
fn short(v: f64) -> String {
    match v {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

#[component]
pub fn LineChart(
    series: Signal<Vec<Series>>,
    x_label: &'static str,
    y_label: &'static str,
    testid: &'static str,
) -> impl IntoView {
    move || {
        let all = series.get();
        let points = all.iter().flat_map(|s| s.points.iter());
        let (x_max, y_max) = points.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
        if x_max <= 0.0 || y_max <= 0.0 {
            return None;
        }
        let (x_max, y_max) = (x_max, y_max * 1.05);
        let sx = move |x: f64| LEFT + (WIDTH - LEFT - 4.0) * x / x_max;
        let sy = move |y: f64| (HEIGHT - BOTTOM) * (1.0 - y / y_max);
        let drawn = all
            .iter()
            .map(|s| {
                let line: Vec<String> =
                    s.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
                let dots = s
                    .points
                    .iter()
                    .map(|&(x, y)| {
                        view! { <circle cx=format!("{:.1}", sx(x)) cy=format!("{:.1}", sy(y)) r="2.5"><title>{format!("{}: {x} → {y:.2}", s.name)}</title></circle> }
                    })
                    .collect_view();
                let fitted = s.fit.as_ref().map(|f| {
                    let curve: Vec<String> = (0..=60)
                        .map(|i| x_max * i as f64 / 60.0)
                        .map(|x| format!("{:.1},{:.1}", sx(x), sy(f.at(x).clamp(0.0, y_max))))
                        .collect();
                    view! { <polyline class="fit" points=curve.join(" ")></polyline> }
                });
                view! {
                    <g class=format!("series {}", s.class) data-series=s.name.clone()>
                        <polyline class="line" points=line.join(" ")></polyline>
                        {dots}
                        {fitted}
                    </g>
                }
            })
            .collect_view();
        let legend = all
            .iter()
            .map(|s| view! { <span class=format!("key {}", s.class)>{s.name.clone()}</span> })
            .collect_view();
        let base = HEIGHT - BOTTOM;
        Some(view! {
            <figure class="line-chart" data-testid=testid>
                <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-label=format!("{y_label} against {x_label}")>
                    <line class="axis" x1=LEFT.to_string() y1="0" x2=LEFT.to_string() y2=base.to_string()></line>
                    <line class="axis" x1=LEFT.to_string() y1=base.to_string() x2=WIDTH.to_string() y2=base.to_string()></line>
                    <text class="tick" x=(LEFT - 4.0).to_string() y="10" text-anchor="end">{short(y_max)}</text>
                    <text class="tick" x=(LEFT - 4.0).to_string() y=base.to_string() text-anchor="end">"0"</text>
                    <text class="tick" x=LEFT.to_string() y=(HEIGHT - 6.0).to_string()>"0"</text>
                    <text class="tick" x=WIDTH.to_string() y=(HEIGHT - 6.0).to_string() text-anchor="end">{short(x_max)}</text>
                    <text class="tick" x=((LEFT + WIDTH) / 2.0).to_string() y=(HEIGHT - 6.0).to_string() text-anchor="middle">{x_label}</text>
                    <text class="tick" x="12" y=(base / 2.0).to_string() text-anchor="middle" transform=format!("rotate(-90 12 {})", base / 2.0)>{y_label}</text>
                    {drawn}
                </svg>
                <figcaption class="legend">{legend}</figcaption>
                <AsTable series=all.clone() x_label=x_label y_label=y_label/>
            </figure>
        })
    }
}

/// The chart's numbers as a table, behind a toggle a screen reader and a
/// keyboard reach: one row per x, one column per series (WCAG 1.1.1).
#[component]
fn AsTable(series: Vec<Series>, x_label: &'static str, y_label: &'static str) -> impl IntoView {
    let mut xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let head = std::iter::once(x_label.to_string()).chain(series.iter().map(|s| s.name.clone()));
    let rows = xs.iter().map(|&x| {
        let ys = series.iter().map(|s| {
            s.points.iter().find(|p| p.0 == x).map(|p| short_exact(p.1)).unwrap_or_default()
        });
        std::iter::once(short_exact(x)).chain(ys).collect()
    });
    view! { <ChartTable caption=format!("{y_label} against {x_label}") head=head.collect() rows=rows.collect()/> }
}

/// Every chart's text alternative: its numbers as a table behind "Show as
/// table" (a `details`, so a keyboard and a screen reader reach it); the
/// first cell of each row is its row header. Above it the chart's **Copy as
/// PNG** and **Download CSV**: the table's cells as shown, or `csv` where
/// the chart has more to give than its rounded cells (the attention map).
#[component]
pub fn ChartTable(
    caption: String,
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    #[prop(optional)] csv: Option<Callback<(), String>>,
) -> impl IntoView {
    let head = head.into_iter().map(|h| view! { <th scope="col">{h}</th> }).collect_view();
    let rows = rows
        .into_iter()
        .map(|row| {
            let mut cells = row.into_iter();
            let first = cells.next().unwrap_or_default();
            let rest = cells.map(|c| view! { <td>{c}</td> }).collect_view();
            view! { <tr><th scope="row">{first}</th>{rest}</tr> }
        })
        .collect_view();
    // The chart is the first SVG or canvas of the box this table sits in.
    let node = NodeRef::<leptos::html::Details>::new();
    let chart = Callback::new(move |()| {
        node.get()?.parent_element()?.query_selector("svg, canvas").ok().flatten()
    });
    let table = Callback::new(move |()| node.get()?.query_selector("table").ok().flatten());
    let slug = crate::csv::slug(&caption);
    let csv_name = format!("decode-lab-{slug}.csv");
    let download = move |_| {
        let text = match csv {
            Some(csv) => Some(csv.run(())),
            None => table.run(()).map(|t| crate::csv::table_csv(&t)),
        };
        if let Some(text) = text {
            crate::csv::save(&csv_name, &text);
        }
    };
    view! {
        <div class="exports">
            <CopyPng find=chart label=caption.clone()/>
            <button type="button" class="export" data-testid="download-csv" aria-label=format!("Download CSV: {caption}") on:click=download>"Download CSV"</button>
        </div>
        <details class="as-table" data-testid="chart-table" node_ref=node>
            <summary>"Show as table"</summary>
            <table class="figures">
                <caption>{caption}</caption>
                <thead><tr>{head}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </details>
    }
}

/// `v` as a table cell shows it: whole numbers whole, others to 4 decimals (trailing zeros dropped).
pub fn short_exact(v: f64) -> String {
    match v.fract() == 0.0 && v.abs() < 1e15 {
        true => format!("{v:.0}"),
        false => format!("{:.4}", v).trim_end_matches('0').to_string(),
    }
}

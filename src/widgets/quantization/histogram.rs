//! One weight matrix's values as a histogram with the quantisation grids over
//! it: the per-tensor int8 grid (every level a tick), the per-tensor int4 grid
//! (its 16 levels as lines), the outliers beyond the 99.9th percentile of |w|
//! marked (the weights a grid fitted to 99.9 % of them would clip), and the
//! figures that say why one scale per channel beats one per tensor.

use contract::Control;
use engine::lessons::spread::{spread, Spread};
use engine::storage::format::Format;
use leptos::prelude::*;

use crate::driver::Driver;
use crate::widgets::chart::ChartTable;

const BINS: usize = 80;
/// The chart's size in SVG units.
const W: f64 = 640.0;
const H: f64 = 180.0;

/// The matrix names of the loaded model and the one chosen (`tensor=`; an
/// unknown name falls back to the first layer's MLP up-projection, with a notice).
fn choose(d: Driver) -> (Vec<String>, String, Option<String>) {
    let names: Vec<String> = d
        .lab
        .with_value(|l| l.model.weights.named_matrices().into_iter().map(|(n, _)| n).collect());
    let fallback = names.iter().find(|n| n.ends_with("mlp.c_fc.weight")).or(names.first()).cloned();
    let fallback = fallback.unwrap_or_default();
    let asked = d.controls.text(Control::Tensor).get();
    match names.contains(&asked) {
        true => (names, asked, None),
        false if asked.is_empty() => (names, fallback, None),
        false => {
            let notice = format!(
                "tensor: this model has no matrix called {}; showing {fallback}",
                contract::echo(&asked)
            );
            (names, fallback, Some(notice))
        }
    }
}

#[component]
pub fn Histogram(driver: Driver) -> impl IntoView {
    let d = driver;
    let chosen = Memo::new(move |_| choose(d));
    let figures = Memo::new(move |_| {
        let (_, name, _) = chosen.get();
        d.lab.with_value(|l| {
            let named = l.model.weights.named_matrices();
            named.into_iter().find(|(n, _)| *n == name).map(|(_, m)| spread(m, BINS))
        })
    });
    let tensor = d.controls.text(Control::Tensor);
    let options = move || {
        let (names, current, _) = chosen.get();
        names
            .into_iter()
            .map(|n| {
                let on = n == current;
                view! { <option value=n.clone() selected=on>{n.clone()}</option> }
            })
            .collect_view()
    };
    view! {
        <section class="panel histogram" data-testid="quant-histogram">
            <div class="control">
                <label for="control-tensor">"Weight matrix"</label>
                <select id="control-tensor" data-testid="tensor"
                    on:change=move |ev| tensor.set(event_target_value(&ev))>{options}</select>
            </div>
            {move || chosen.get().2.map(|n| view! { <p class="notice" role="status">{n}</p> })}
            {move || figures.get().map(|s| view! { <Chart s=s.clone()/><Figures s=s/> })}
        </section>
    }
}

/// x position of weight value `v` on the chart.
fn x_of(s: &Spread, v: f32) -> f64 {
    let a = f64::from(s.absmax.max(f32::MIN_POSITIVE));
    (f64::from(v) / a + 1.0) / 2.0 * W
}

#[component]
fn Chart(s: Spread) -> impl IntoView {
    // Log counts: the tails (where the outliers live) stay visible.
    let top = s.bins.iter().map(|&c| (c as f64 + 1.0).ln()).fold(0.0, f64::max).max(1e-9);
    let bw = W / s.bins.len() as f64;
    let bars = s.bins.iter().enumerate().map(|(i, &c)| {
        let h = (c as f64 + 1.0).ln() / top * (H - 20.0);
        view! { <rect class="bin" x=i as f64 * bw y=H - 20.0 - h width=bw.max(1.0) - 0.5 height=h/> }
    }).collect_view();
    let step = s.tensor_step();
    let int8 = (-127..=127)
        .map(|k| {
            let x = x_of(&s, k as f32 * step);
            view! { <line class="grid-int8" x1=x x2=x y1=H - 20.0 y2=H - 14.0/> }
        })
        .collect_view();
    // int4 per tensor on the same absmax: 16 levels, step absmax / 8.
    let int4 = (-8..=7)
        .map(|k| {
            let x = x_of(&s, k as f32 * s.absmax / 8.0);
            view! { <line class="grid-int4" x1=x x2=x y1=0.0 y2=H - 20.0/> }
        })
        .collect_view();
    let outliers = s
        .outliers
        .iter()
        .map(|&v| {
            let x = x_of(&s, v);
            view! { <circle class="outlier" cx=x cy=H - 8.0 r=2.5/> }
        })
        .collect_view();
    let label = format!(
        "histogram of {} weights from −{a:.3} to {a:.3}; {} outliers beyond ±{:.3}",
        s.n,
        s.outliers.len(),
        s.p999,
        a = s.absmax
    );
    view! {
        <svg class="hist" viewBox=format!("0 0 {W} {H}") role="img" aria-label=label>
            {int4}{bars}{int8}{outliers}
        </svg>
        {as_table(&s)}
        <p class="legend">"bars: weights (log scale) · thin ticks: the 255 int8 levels of one scale per tensor · lines: the 16 int4 levels of one scale per tensor · red dots: the outliers (beyond the 99.9th percentile of |w|)"</p>
    }
}

#[component]
fn Figures(s: Spread) -> impl IntoView {
    let e = |f: Format| format!("{:.2e}", s.error(f));
    let lines = [
        format!("{} weights, {} output channels; max |w| = {:.4}, 99.9th percentile of |w| = {:.4}.", s.n, s.channels, s.absmax, s.p999),
        format!(
            "One scale per tensor: step = max|w| / 127 = {:.2e}, set by the {} outliers; the median channel (max |w| = {:.4}) then uses {} of the 255 int8 levels. One scale per channel gives every channel all 255.",
            s.tensor_step(), s.outliers.len(), s.median_channel_absmax, s.median_channel_levels()
        ),
        format!(
            "A grid fitted to the 99.9th percentile instead would be {:.1}× finer but would clip those {} weights to ±{:.4}.",
            s.absmax / s.p999.max(f32::MIN_POSITIVE), s.outliers.len(), s.p999
        ),
        format!(
            "RMS rounding error, measured by packing this matrix: int8 per tensor {}, int8 per channel {}, int4 per 32 {}, bf16 {}, f16 {}.",
            e(Format::Int8PerTensor), e(Format::Int8), e(Format::Int4), e(Format::Bf16), e(Format::F16)
        ),
    ];
    view! {
        <ul class="readout" data-testid="quant-spread">
            {lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}
        </ul>
    }
}

/// The histogram's bins as a table (its text alternative): each bin's range and count.
fn as_table(s: &Spread) -> impl IntoView {
    let a = f64::from(s.absmax);
    let width = 2.0 * a / s.bins.len().max(1) as f64;
    let rows = s.bins.iter().enumerate().map(|(i, &count)| {
        let from = -a + width * i as f64;
        vec![format!("{from:.4} to {:.4}", from + width), count.to_string()]
    });
    let head = vec!["weights from … to".to_string(), "count".to_string()];
    let caption = format!("how many of the {} weights fall in each bin", s.n);
    view! { <ChartTable caption=caption head=head rows=rows.collect()/> }
}

//! What the measurement shows: per-step and cumulative time with and
//! without the cache (each per-step curve with its fitted a + b·n + c·n²),
//! the correctness badge, the cache's bytes three ways, and the projection
//! count of the lesson's formula.

use engine::lessons::cost::{cumulative, fit, kv_projections, Fit};
use leptos::prelude::*;

use super::measure::Sinks;
use crate::scroll::Scroll;
use crate::widgets::chart::{LineChart, Series};

/// Points of a curve: (n, ms).
type Curve = Vec<(f64, f64)>;

/// The steps timed with and without the cache.
fn curves(sinks: Sinks) -> (Curve, Curve) {
    sinks.points.with(|points| {
        let with = points.iter().map(|p| (p.n as f64, p.cached_ms)).collect();
        let without = points.iter().filter_map(|p| Some((p.n as f64, p.uncached_ms?))).collect();
        (with, without)
    })
}

fn two(with: Curve, without: Curve, fitted: bool) -> Vec<Series> {
    let fit_of = |p: &[(f64, f64)]| if fitted { fit(p, 2) } else { None };
    vec![
        Series { name: "with the cache".into(), class: "cached", fit: fit_of(&with), points: with },
        Series {
            name: "without the cache".into(),
            class: "uncached",
            fit: fit_of(&without),
            points: without,
        },
    ]
}

/// `a + b·n + c·n²` in words.
fn quadratic(f: &Fit) -> String {
    let [a, b, c] = [f.coeffs[0], f.coeffs[1], f.coeffs[2]];
    format!("{a:.3} + {b:.4}·n + {c:.2e}·n² ms (R² = {:.3})", f.r2)
}

#[component]
pub fn Curves(sinks: Sinks) -> impl IntoView {
    let per_step = Signal::derive(move || {
        let (with, without) = curves(sinks);
        two(with, without, true)
    });
    let total = Signal::derive(move || {
        let (with, without) = curves(sinks);
        two(cumulative(&with), cumulative(&without), false)
    });
    let fits = move || {
        per_step
            .get()
            .into_iter()
            .filter_map(|s| Some((s.name, s.class, s.fit?)))
            .map(|(name, class, f)| {
                view! { <li data-testid="kv-fit" data-series=class data-r2=format!("{:.4}", f.r2)>{format!("{name}: {}", quadratic(&f))}</li> }
            })
            .collect_view()
    };
    view! {
        <div class="chart-pair">
            <div>
                <h3>"One step"</h3>
                <LineChart series=per_step x_label="sequence length n" y_label="ms per step" testid="kv-per-step"/>
            </div>
            <div>
                <h3>"All steps so far"</h3>
                <LineChart series=total x_label="sequence length n" y_label="total ms" testid="kv-cumulative"/>
            </div>
        </div>
        <ul class="fits">{fits}</ul>
        <p class="legend">"Fitted by least squares to the measured steps (a flat curve has an R² near 0: the length explains little of its noise). The totals add every step from 1 to n; between the steps timed without the cache, the straight line between its neighbours stands in."</p>
    }
}

/// How far the two paths' logits are apart, in words.
fn logits_words(max_abs_diff: f32) -> String {
    match max_abs_diff {
        0.0 => {
            "the logits are identical bit for bit (the same arithmetic in the same order)".into()
        }
        d => format!("largest |Δlogit| {d:.2e} (the same arithmetic in another order)"),
    }
}

/// Green when both paths chose the same token at every compared step.
#[component]
pub fn Badge(sinks: Sinks) -> impl IntoView {
    move || {
        sinks.check.get().map(|c| {
            let (mark, words) = if c.same_tokens {
                ("✓", "same next token with and without the cache")
            } else {
                ("✗", "the next token differs between the two paths")
            };
            view! {
                <p class="badge" data-testid="kv-check" data-same=c.same_tokens.to_string()
                    data-max-diff=format!("{:e}", c.max_abs_diff) class:ok=c.same_tokens>
                    {format!("{mark} {words} at all {} compared steps; {}", c.steps, logits_words(c.max_abs_diff))}
                </p>
            }
        })
    }
}

/// The cache's size now: the formula, and the cache's own rows and allocation.
#[component]
pub fn BytesTable(sinks: Sinks) -> impl IntoView {
    move || {
        sinks.bytes.get().map(|b| {
            let rows = [
                ("formula", "2 · n_layer · n_embd · 4 bytes · n".to_string(), b.formula),
                ("in-use", "the rows the engine's cache holds (read from the cache)".to_string(), b.cache.in_use),
                ("allocated", "the cache's allocation, made when the session opened (the whole context; on the CPU engine at most 2,048 positions of it, then more as tokens arrive)".to_string(), b.cache.allocated),
            ];
            let rows = rows
                .into_iter()
                .map(|(key, what, bytes)| view! {
                    <tr data-testid="kv-bytes-row" data-row=key data-bytes=bytes.to_string()><th>{what}</th><td>{format!("{bytes} B")}</td></tr>
                })
                .collect_view();
            view! {
                <Scroll label="the cache in bytes, three ways"><table class="figures" data-testid="kv-bytes-table">
                    <thead><tr><th>{format!("KV cache at n = {}", b.n)}</th><th>"bytes"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table></Scroll>
            }
        })
    }
}

/// Contexts the projection table prices, with `NEW` tokens generated.
const CONTEXTS: [u64; 4] = [100, 500, 1000, 2000];
const NEW: u64 = 500;

/// K and V projections needed to generate `NEW` tokens, with and without the cache.
#[component]
pub fn Projections() -> impl IntoView {
    let rows = CONTEXTS
        .into_iter()
        .map(|l| {
            let (with, without) = kv_projections(l, NEW);
            view! {
                <tr data-testid="kv-projections" data-context=l.to_string()>
                    <td>{l}</td><td data-col="with">{with}</td><td data-col="without">{without}</td>
                    <td>{format!("{:.0}×", without as f64 / with as f64)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <Scroll label="tokens computed with and without the cache"><table class="figures">
            <thead><tr>
                <th>"prompt tokens L"</th><th>"with the cache: L + T − 1"</th>
                <th>"without: T·L + T(T − 1)/2"</th><th>"ratio"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></Scroll>
        <p class="legend">{format!("Token passes through each layer's K and V projections to generate T = {NEW} tokens after a prompt of L tokens. Without the cache step t runs all L + t tokens again.")}</p>
    }
}

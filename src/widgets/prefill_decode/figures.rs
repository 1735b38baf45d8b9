//! The lesson's numbers: the cold run against the warm runs' medians (time
//! to first token, pp and tg rates, a decode step's dispatches, submits and
//! bytes), the token-by-token ratio, and the fitted TTFT curve.

use engine::lessons::cost::{fit, median, Fit, Timeline};
use leptos::prelude::*;

use super::measure::{Point, Run, Sinks};
use crate::scroll::Scroll;
use crate::widgets::chart::{LineChart, Series};
use crate::widgets::measuring::bandwidth_sentence;

/// The warm runs' figures as one: medians of each.
struct Warm {
    prompt_tokens: usize,
    ttft_ms: f64,
    decode_ms: Option<f64>,
    one_pass_ms: Option<f64>,
}

fn warm(runs: &[Run]) -> Option<Warm> {
    let first = runs.first()?;
    let of =
        |f: &dyn Fn(&Run) -> Option<f64>| median(&runs.iter().filter_map(f).collect::<Vec<_>>());
    Some(Warm {
        prompt_tokens: first.timeline.prompt_tokens(),
        ttft_ms: of(&|r| Some(r.timeline.ttft_ms()))?,
        decode_ms: of(&|r| r.timeline.decode_ms()),
        one_pass_ms: of(&|r| r.one_pass.map(|s| s.wall_ms)),
    })
}

/// A run's GPU time (timestamp queries): the prompt's pass and the median decode step.
fn gpu_ms(t: &Timeline) -> String {
    let decode = median(&t.decode.iter().filter_map(|s| s.gpu_ms).collect::<Vec<_>>());
    match (t.prefill.gpu_ms, decode) {
        (Some(p), Some(d)) => format!("{p:.2}, {d:.2}"),
        _ => "—".into(),
    }
}

/// The warm runs' GPU times as one: medians of each.
fn warm_gpu(runs: &[Run]) -> String {
    let prefill =
        median(&runs.iter().filter_map(|r| r.timeline.prefill.gpu_ms).collect::<Vec<_>>());
    let decode = median(
        &runs
            .iter()
            .flat_map(|r| r.timeline.decode.iter().filter_map(|s| s.gpu_ms))
            .collect::<Vec<_>>(),
    );
    match (prefill, decode) {
        (Some(p), Some(d)) => format!("{p:.2}, {d:.2}"),
        _ => "—".into(),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.2}"))
}

fn rate(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.1}"))
}

/// The warm decode steps' share of this device's read rate.
#[component]
pub fn BandwidthLine(sinks: Sinks) -> impl IntoView {
    move || {
        let device = sinks.device.get()?;
        let runs = sinks.runs.get();
        let warm = runs.get(1..).filter(|w| !w.is_empty())?;
        let steps: Vec<_> = warm.iter().flat_map(|r| r.timeline.decode.iter().copied()).collect();
        let bytes = warm.iter().map(|r| r.reads).sum::<u64>() as f64 / steps.len().max(1) as f64;
        let sentence = bandwidth_sentence(&steps, bytes, &device)?;
        Some(view! { <p class="verdict" data-testid="bandwidth">{sentence}</p> })
    }
}

/// Cold against warm, row by row.
#[component]
pub fn FiguresTable(sinks: Sinks) -> impl IntoView {
    let table = move || {
        let runs = sinks.runs.get();
        let cold = runs.first()?.clone();
        let warm = warm(runs.get(1..).unwrap_or_default());
        let c = &cold.timeline;
        let step = c.decode.first().copied().unwrap_or_default();
        let (n, steps) = (c.prompt_tokens(), c.decode.len());
        let w = |f: &dyn Fn(&Warm) -> Option<f64>| warm.as_ref().and_then(f);
        let rows: Vec<(&str, String, String, String)> = vec![
            (
                "ttft",
                "time to first token (ms)".into(),
                ms(Some(c.ttft_ms())),
                ms(w(&|w| Some(w.ttft_ms))),
            ),
            (
                "pp",
                format!("prompt tokens/s (pp{n})"),
                rate(Some(c.prefill_tokens_per_s())),
                rate(w(&|w| Some(w.prompt_tokens as f64 / (w.ttft_ms / 1e3)))),
            ),
            (
                "decode-ms",
                "decode ms/token (median)".into(),
                ms(c.decode_ms()),
                ms(w(&|w| w.decode_ms)),
            ),
            (
                "tg",
                format!("generated tokens/s (tg{steps})"),
                rate(c.decode_tokens_per_s()),
                rate(w(&|w| w.decode_ms.map(|m| 1e3 / m))),
            ),
            (
                "gpu",
                "GPU time: prefill, decode step (ms)".into(),
                gpu_ms(c),
                warm_gpu(runs.get(1..).unwrap_or_default()),
            ),
            (
                "compile",
                "pipelines compiled when the model loaded (ms)".into(),
                sinks
                    .compile_ms
                    .get()
                    .map_or("none: the CPU engine".into(), |ms| format!("{ms:.1}")),
                String::new(),
            ),
            (
                "calls",
                "per decode step: dispatches, submits".into(),
                format!("{}, {}", step.dispatches, step.submits),
                String::new(),
            ),
            (
                "bytes",
                "per decode step: bytes written, read back".into(),
                format!("{}, {}", step.bytes_written, step.bytes_read),
                String::new(),
            ),
        ];
        let rows = rows
            .into_iter()
            .map(|(key, what, cold, warm)| view! {
                <tr data-testid="cost-row" data-row=key><th>{what}</th><td data-col="cold">{cold}</td><td data-col="warm">{warm}</td></tr>
            })
            .collect_view();
        let done = warm.as_ref().map_or(0, |_| runs.len() - 1);
        let timer = match step.gpu_ms {
            Some(_) => "GPU time comes from the device's timestamp queries (the start and end of each step's compute pass); wall time adds the submit, the wait and the readback.",
            None if step.dispatches == 0 => "The CPU engine has no device: wall time is all there is.",
            None => "This device offers no timestamp queries: wall time only.",
        };
        Some(view! {
            <p class="legend" data-testid="cost-timer">{timer}</p>
            <Scroll label="prefill and decode figures"><table class="figures" data-testid="cost-table">
                <thead><tr><th></th><th>"cold (first run, new session)"</th><th>{format!("warm (median of {done})")}</th></tr></thead>
                <tbody>{rows}</tbody>
            </table></Scroll>
            {by_token(warm)}
        })
    };
    view! { {table} }
}

/// How much later the first token comes when the prompt goes in token by token.
fn by_token(warm: Option<Warm>) -> Option<impl IntoView> {
    let w = warm?;
    let one = w.one_pass_ms?;
    let per = w.decode_ms.map_or(String::new(), |d| {
        format!(" — about {} decode steps of {d:.2} ms", w.prompt_tokens)
    });
    Some(view! {
        <p class="readout" data-testid="by-token-ratio" data-ratio=format!("{:.3}", w.ttft_ms / one)>
            {format!(
                "Token by token, the first token waits {:.2} ms for a {}-token prompt{per}: {:.1}× the one-pass prefill's {one:.2} ms.",
                w.ttft_ms, w.prompt_tokens, w.ttft_ms / one
            )}
        </p>
    })
}

/// `a + b·n` in words.
fn line_words(f: &Fit) -> String {
    format!("{:.2} ms + {:.3} ms per prompt token (R² = {:.3})", f.coeffs[0], f.coeffs[1], f.r2)
}

/// The time-to-first-token curve, its fits and its points.
#[component]
pub fn CurvePanel(sinks: Sinks) -> impl IntoView {
    let series = Signal::derive(move || {
        let curve = sinks.curve.get();
        let one: Vec<(f64, f64)> = curve.iter().map(|p| (p.n as f64, p.one_pass_ms)).collect();
        let by: Vec<(f64, f64)> =
            curve.iter().filter_map(|p| Some((p.n as f64, p.by_token_ms?))).collect();
        let mut all = vec![Series {
            name: "one pass".into(),
            class: "one-pass",
            fit: fit(&one, 1),
            points: one,
        }];
        if !by.is_empty() {
            all.push(Series {
                name: "token by token".into(),
                class: "by-token",
                fit: fit(&by, 1),
                points: by,
            });
        }
        all
    });
    let fits = move || {
        series
            .get()
            .into_iter()
            .filter_map(|s| Some((s.name, s.fit?)))
            .map(|(name, f)| view! { <li data-testid="curve-fit" data-slope=format!("{:.6}", f.coeffs[1])>{format!("{name}: {}", line_words(&f))}</li> })
            .collect_view()
    };
    let points = move || {
        sinks.curve.get().into_iter().map(|p: Point| view! {
        <tr data-testid="curve-point" data-n=p.n.to_string()>
            <td>{p.n}</td><td data-col="one-pass">{format!("{:.2}", p.one_pass_ms)}</td>
            <td data-col="by-token">{ms(p.by_token_ms)}</td>
            <td>{p.by_token_ms.map_or("—".into(), |b| format!("{:.1}×", b / p.one_pass_ms))}</td>
        </tr>
    }).collect_view()
    };
    view! {
        <LineChart series=series x_label="prompt tokens" y_label="ms to first token" testid="ttft-curve"/>
        <ul class="fits">{fits}</ul>
        <details><summary>"the points"</summary>
            <table class="figures"><thead><tr><th>"prompt tokens"</th><th>"one pass (ms)"</th><th>"token by token (ms)"</th><th>"ratio"</th></tr></thead>
            <tbody>{points}</tbody></table>
        </details>
    }
}

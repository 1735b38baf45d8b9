//! The table of measured figures: a row per weight format, and on the CPU
//! engine int8 and int4 again with 8-bit activations.

use engine::storage::format::Format;
use leptos::prelude::*;

use super::measure::{Kind, Parting, Row, Sinks, REFERENCE};

/// The row every speed is relative to: a converted checkpoint's bytes.
const F16: Kind = Kind { format: Format::F16, int8_activations: false };

use crate::scroll::FigureTable;

/// `v` with `digits` decimals, or an em dash while it is being measured.
fn figure(v: Option<f64>, digits: usize) -> String {
    v.map_or("—".into(), |v| format!("{v:.digits$}"))
}

/// What each row runs, in a few words.
fn what(kind: Kind) -> String {
    let weights = match kind.format {
        Format::F32 => "4 bytes, the reference",
        Format::F16 => "2 bytes: 5-bit exponent, 10-bit mantissa",
        Format::Bf16 => "2 bytes: f32's exponent, 7-bit mantissa",
        Format::Int8PerTensor => "1 byte, one scale for the whole matrix",
        Format::Int8 => "1 byte, one scale per output channel",
        Format::Int4 => "½ byte, one scale per 32 weights",
    };
    match kind.int8_activations {
        true => format!("{weights}; each input rounded to 8 bits (a scale per 32) and multiplied in integers, as llama.cpp's Q8_0 and Q4_0"),
        false => weights.to_string(),
    }
}

#[component]
pub fn FiguresTable(sinks: Sinks) -> impl IntoView {
    let rows = move || {
        sinks.rows.get().into_iter().map(|row| view! { <FormatRow row=row/> }).collect_view()
    };
    view! {
        <FigureTable label="every weight format, measured" testid="quant-table" columns=&["format", "weight bytes", "decode ms/token", "prefill ms (the prompt)", "held-out bits/byte", "KL mean (nats)", "KL p99.9", "same top-1", "RMS Δp", "greedy text parts at"]>{rows}</FigureTable>
    }
}

#[component]
fn FormatRow(row: Row) -> impl IntoView {
    let Row { kind, bytes, ms_per_token, prefill_ms, parts, drift, .. } = row;
    let bpb = move || drift.map(|d| d.bits_per_byte());
    let is_reference = kind == REFERENCE;
    let activations = if kind.int8_activations { "int8" } else { "f32" };
    let vs = |v: Option<f64>, digits: usize| match (is_reference, v) {
        (true, Some(_)) => "reference".to_string(),
        _ => figure(v, digits),
    };
    let parts = match (is_reference, parts) {
        (true, Some(_)) => "reference".into(),
        (_, Some(Parting::At(step))) => format!("step {step}"),
        (_, Some(Parting::Never(steps))) => format!("not in {steps} steps"),
        (_, None) => "—".into(),
    };
    view! {
        <tr data-testid="quant-row" data-format=kind.format.name() data-activations=activations>
            <th title=what(kind)>{kind.name()}</th>
            <td data-col="bytes">{format!("{:.2} MB", bytes as f64 / 1e6)}</td>
            <td data-col="ms">{figure(ms_per_token, 2)}</td>
            <td data-col="prefill">{figure(prefill_ms, 1)}</td>
            <td data-col="bpb">{move || figure(bpb(), 4)}</td>
            <td data-col="kl">{vs(drift.map(|d| d.kl_mean), 6)}</td>
            <td data-col="kl999">{vs(drift.map(|d| d.kl_p999), 5)}</td>
            <td data-col="top1">{vs(drift.map(|d| 100.0 * d.same_top1), 2)}{(!is_reference && drift.is_some()).then_some(" %")}</td>
            <td data-col="rms">{vs(drift.map(|d| d.rms_dp), 7)}</td>
            <td data-col="parts">{parts}</td>
        </tr>
    }
}

/// What the figures say about f16 on this checkpoint: exactly zero drift
/// when f16 holds every weight (said only once measured, never assumed).
#[component]
pub fn F16Verdict(sinks: Sinks) -> impl IntoView {
    let line = move || {
        let rows = sinks.rows.get();
        let f16 = rows.iter().find(|r| r.kind == F16)?;
        let f32 = rows.iter().find(|r| r.kind == REFERENCE)?;
        let d = f16.drift?;
        let exact = d.kl_mean == 0.0 && d.rms_dp == 0.0 && d.same_top1 == 1.0;
        Some(match exact {
            true => format!(
                "f16 vs f32: exactly zero drift over {} predictions — the checkpoint's weights are f16 values, so f16 holds them bit for bit in half the bytes ({:.2} MB vs {:.2} MB).",
                d.positions, f16.bytes as f64 / 1e6, f32.bytes as f64 / 1e6
            ),
            false => format!(
                "f16 vs f32: mean KL {:.2e} nats over {} predictions — this checkpoint has weights f16 cannot hold exactly.",
                d.kl_mean, d.positions
            ),
        })
    };
    view! { <p class="readout" data-testid="f16-verdict">{line}</p> }
}

/// What this device measured: each row's decode and prefill time against
/// f16's (the same bytes per weight as a converted checkpoint), whether
/// fewer bytes made tokens faster here, where 8-bit activations did, and
/// which rows had the coworker.
/// Said only once measured.
#[component]
pub fn SpeedVerdict(sinks: Sinks) -> impl IntoView {
    let line = move || {
        let rows = sinks.rows.get();
        let f16 = rows.iter().find(|r| r.kind == F16)?;
        let (decode, prefill) = (f16.ms_per_token?, f16.prefill_ms?);
        let mut times = Vec::new();
        for r in &rows {
            times.push((r.kind, r.ms_per_token? / decode, r.prefill_ms? / prefill));
        }
        let ratios = |pick: fn(&(Kind, f64, f64)) -> f64| {
            let each = times.iter().filter(|t| t.0 != F16);
            each.map(|t| format!("{} {:.2}×", t.0.name(), pick(t))).collect::<Vec<_>>().join(", ")
        };
        let names = |keep: &dyn Fn(&(Kind, f64, f64)) -> bool| {
            times.iter().filter(|t| keep(t)).map(|t| t.0.name()).collect::<Vec<_>>()
        };
        let slower = names(&|t| t.0.format.takes_int8_activations() && t.1 >= 1.0);
        let verdict = match slower.is_empty() {
            true => "fewer bytes per weight gave faster tokens here, as the bytes predict.".to_string(),
            false => format!("fewer bytes did not give faster tokens here for {}: unpacking, not reading, bounds those steps on this engine.", slower.join(", ")),
        };
        let two = rows.iter().filter(|r| r.coworker == Some(true)).map(|r| r.kind.name());
        let two: Vec<String> = two.collect();
        let workers = match two.len() {
            0 => String::new(),
            n if n == rows.len() => " Every row's decode steps ran on two workers (the CPU worker and its coworker).".to_string(),
            _ => format!(" Decode steps of {} ran on two workers (the CPU worker and its coworker), the others' on one.", two.join(", ")),
        };
        let integers = match names(&|t| t.0.int8_activations && t.1 < 1.0) {
            faster if faster.is_empty() => String::new(),
            faster => format!(
                " Multiplied in integers, with 8-bit activations, {} decoded faster than f16.",
                faster.join(", ")
            ),
        };
        Some(format!(
            "On this device, time per decode step against f16's {decode:.2} ms: {}. Prefill of the prompt against f16's {prefill:.1} ms: {}. So {verdict}{integers}{workers}",
            ratios(|t| t.1),
            ratios(|t| t.2)
        ))
    };
    view! { <p class="readout" data-testid="quant-speed">{line}</p> }
}

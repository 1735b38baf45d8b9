//! `device`: this browser and machine, measured on the page's own engine —
//! the load by part (time to interactive), the first token, each kernel
//! profile the chooser would time here, the device's rates, the kernels in
//! use and why — as tables and one JSON report (Copy report; `report=URL`
//! measures as the page loads and POSTs the report to the page's own origin,
//! for a harness that measures a device unattended).

mod measure;
mod report;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::driver::Driver;
use crate::embed::{copy_to_clipboard, select_all};
use crate::scroll::Scroll;
use crate::widgets::measuring::{MeasureEditor, MeasuredPanel, Progress};
use report::DeviceReport;

#[component]
pub fn Device(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let progress = RwSignal::new(Progress::default());
    let report = RwSignal::new(None::<DeviceReport>);
    let sent = RwSignal::new(None::<Result<String, String>>);
    let send_to = d.controls.text(Control::Report);
    let start = move || {
        let to = send_to.get_untracked();
        d.launch_when_idle(move |d| async move {
            // Checked before measuring: a refused address costs nothing.
            let to = (!to.trim().is_empty()).then(|| report::same_origin(to.trim())).transpose()?;
            let measured = measure::measure(d, progress).await?;
            report.set(Some(measured.clone()));
            if let Some(url) = to {
                let json = serde_json::to_string(&measured).map_err(|e| e.to_string())?;
                sent.set(Some(match report::send(&url, &json).await {
                    Ok(status) => Ok(format!("The report was sent to {url} (HTTP {status}).")),
                    Err(e) => Err(e),
                }));
            }
            Ok(())
        });
    };
    // A harness's link measures at once.
    if !send_to.get_untracked().trim().is_empty() {
        start();
    }
    let times = d.lab.with_value(|l| l.times);
    view! {
        <div class="widget-body device">
            <MeasureEditor driver=d shown=shown progress=progress testid="device-progress">
                <button data-testid="measure-device" disabled=move || d.generating.get() on:click=move |_| start()>"Measure this device"</button>
            </MeasureEditor>
            <MeasuredPanel driver=d>
                <LoadTable times=times report=report/>
                <ProfilesTable report=report/>
                <Rates report=report/>
                <ReportBox report=report sent=sent/>
            </MeasuredPanel>
        </div>
    }
}

/// Milliseconds as the tables show them.
fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "—".into()
    }
}

/// The page's load by part, and the first token once measured.
#[component]
fn LoadTable(
    times: crate::load::times::LoadTimes,
    report: RwSignal<Option<DeviceReport>>,
) -> impl IntoView {
    let rows = [
        ("asking the browser for a GPU", times.probe_ms),
        ("downloading the model (or reading the page's cache)", times.download_ms),
        ("checking it and packing the weights", times.prepare_ms),
        (
            "opening the engine (GPU: upload, pipelines, kernel choice; else the CPU worker)",
            times.engine_ms,
        ),
    ];
    let body = rows
        .into_iter()
        .map(|(what, v)| view! { <tr><th scope="row">{what}</th><td class="num">{ms(v)}</td></tr> })
        .collect_view();
    let first = move || {
        report.get().map(|r| ms(r.first_token_ms)).unwrap_or_else(|| "Measure to time it".into())
    };
    view! {
        <h3>"Loading this page"</h3>
        <Scroll label="loading this page, by part"><table class="figures device-load" data-testid="device-load" data-ready-at=times.ready_at_ms.to_string()>
            <thead><tr><th>"part"</th><th>"ms"</th></tr></thead>
            <tbody>
                {body}
                <tr><th scope="row">"the first token (a fresh session's prompt pass)"</th><td class="num" data-testid="device-first-token">{first}</td></tr>
                <tr><th scope="row">"ready, from the page's start"</th><td class="num">{ms(times.ready_at_ms)}</td></tr>
            </tbody>
        </table></Scroll>
    }
}

/// Each profile's pass and steps.
#[component]
fn ProfilesTable(report: RwSignal<Option<DeviceReport>>) -> impl IntoView {
    move || {
        let r = report.get()?;
        let rows = r
            .profiles
            .iter()
            .map(|p| {
                let gpu = p.decode_gpu_ms_per_token.map_or("—".into(), |g| format!("{g:.3}"));
                let note = p.error.clone().unwrap_or_default();
                view! {
                    <tr data-testid="device-profile" data-profile=p.profile.clone()
                        data-decode-ms=p.decode_ms_per_token.to_string() data-prefill-ms=p.prefill_ms_per_token.to_string()>
                        <th scope="row">{p.profile.clone()}</th>
                        <td class="num">{p.pipelines_ms.map_or("—".into(), ms)}</td>
                        <td class="num">{format!("{:.3}", p.prefill_ms_per_token)}</td>
                        <td class="num">{format!("{:.3}", p.decode_ms_per_token)}</td>
                        <td class="num">{gpu}</td>
                        <td>{note}</td>
                    </tr>
                }
            })
            .collect_view();
        let first = r.profiles.first().map_or((0, 0), |p| (p.prefill_tokens, p.decode_steps));
        Some(view! {
            <h3>"The model in each kernel profile"</h3>
            <p class="legend">{format!(
                "A {}-token prompt in one pass, then {} decode steps (medians; GPU: the device's own time, where it has timestamps).",
                first.0, first.1
            )}</p>
            <Scroll label="the model in each kernel profile"><table class="figures device-profiles">
                <thead><tr><th>"profile"</th><th>"pipelines, ms"</th><th>"prefill, ms/token"</th><th>"decode, ms/token"</th><th>"GPU, ms/token"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table></Scroll>
        })
    }
}

/// The device's rates and the kernels in use.
#[component]
fn Rates(report: RwSignal<Option<DeviceReport>>) -> impl IntoView {
    move || {
        let r = report.get()?;
        let peak =
            r.device.read_of_published_peak.clone().map_or(String::new(), |s| format!(" ({s})"));
        let v = &r.device.figures;
        let dispatch =
            v.dispatch_ms.map_or(String::new(), |m| format!("; one more dispatch {m:.4} ms"));
        Some(view! {
            <p class="readout" data-testid="device-rates" data-read=v.read_bytes_per_s.to_string()>{format!(
                "Memory read {:.2} GB/s{peak}; copy {:.2} GB/s{dispatch}.",
                v.read_bytes_per_s / 1e9,
                v.copy_bytes_per_s / 1e9
            )}</p>
            <p class="readout" data-testid="device-kernels">{match &r.kernels {
                Some(k) => format!("Kernels in use: {k}."),
                None => "The CPU engine runs (no WebGPU kernels).".into(),
            }}</p>
        })
    }
}

/// The report as JSON, Copy report, and where it was sent.
#[component]
fn ReportBox(
    report: RwSignal<Option<DeviceReport>>,
    sent: RwSignal<Option<Result<String, String>>>,
) -> impl IntoView {
    let copied = RwSignal::new(None::<bool>);
    move || {
        let r = report.get()?;
        let json = serde_json::to_string_pretty(&r).unwrap_or_default();
        let text = json.clone();
        let copy = move |_| {
            let text = text.clone();
            leptos::task::spawn_local(
                async move { copied.set(Some(copy_to_clipboard(&text).await)) },
            );
        };
        Some(view! {
            <h3>"The report"</h3>
            <button data-testid="copy-device-report" on:click=copy>"Copy report"</button>
            {move || copied.get().map(|ok| view! {
                <span class="note" role="status">{if ok { " copied" } else { " select the report below and copy it" }}</span>
            })}
            {move || sent.get().map(|s| match s {
                Ok(said) => view! { <p class="note" role="status" data-testid="device-sent">{said}</p> }.into_any(),
                Err(e) => view! { <p class="error" role="alert" data-testid="error">{e}</p> }.into_any(),
            })}
            <textarea data-testid="device-report" aria-label="the device report, as JSON" readonly rows="12"
                prop:value=json on:focus=select_all></textarea>
        })
    }
}

//! The on-device self-test panel (`?selftest=1`): what the engine's
//! `gpu::selftest` found on this adapter, kernel by kernel and for the whole
//! model, and a "Copy report" button that puts the plain-text report (with
//! the browser and model) on the clipboard for a bug report.

use engine::gpu::selftest::{CaseResult, Report, MODEL_REL_TOL};
use engine::kernels::{Kernel, Profile};
use engine::model::Config;
use leptos::prelude::*;

use crate::embed::{copy_to_clipboard, select_all};

/// What the self-test did on this page.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It ran on the GPU engine.
    Ran(Report),
    /// There was no GPU engine to test (the reason it runs on the CPU).
    NoGpu(String),
}

impl Outcome {
    /// `pass`, `fail` or `no-gpu`: the panel's `data-result`.
    fn result(&self) -> &'static str {
        match self {
            Outcome::Ran(r) if r.passed() => "pass",
            Outcome::Ran(_) => "fail",
            Outcome::NoGpu(_) => "no-gpu",
        }
    }

    /// The report to paste into a bug report: the engine's, then the browser and model.
    fn text(&self, config: &Config) -> String {
        let head = match self {
            Outcome::Ran(r) => r.text(),
            Outcome::NoGpu(reason) => format!("Decode Lab self-test: no GPU engine ({reason})\n"),
        };
        let agent = web_sys::window().and_then(|w| w.navigator().user_agent().ok());
        format!(
            "{head}app: Decode Lab {}\nbrowser: {}\nmodel: n_layer {}, n_head {}, n_embd {}, n_positions {}, vocab_size {}\n",
            env!("CARGO_PKG_VERSION"),
            agent.unwrap_or_else(|| "unknown".into()),
            config.n_layer,
            config.n_head,
            config.n_embd,
            config.n_positions,
            config.vocab_size
        )
    }
}

/// One row per kernel of the profile checked: its cases' worst error and total time.
fn per_kernel(profile: Profile, cases: &[CaseResult]) -> Vec<(Kernel, usize, f32, f64, bool)> {
    profile
        .kernels()
        .into_iter()
        .map(|k| {
            let mine: Vec<_> = cases.iter().filter(|c| c.kernel == k).collect();
            let worst = mine.iter().map(|c| c.max_abs).fold(0.0, f32::max);
            let ms = mine.iter().map(|c| c.ms).sum();
            (k, mine.len(), worst, ms, mine.iter().all(|c| c.passed()))
        })
        .collect()
}

#[component]
pub fn SelfTestPanel(outcome: Outcome, config: Config) -> impl IntoView {
    let text = outcome.text(&config);
    let copied = RwSignal::new(None::<bool>);
    let copy = {
        let text = text.clone();
        move |_| {
            let text = text.clone();
            leptos::task::spawn_local(
                async move { copied.set(Some(copy_to_clipboard(&text).await)) },
            );
        }
    };
    let verdict = match &outcome {
        Outcome::Ran(r) => match r.failure() {
            None => "Every kernel and the whole model agree with the CPU engine on this GPU."
                .to_string(),
            Some(why) => format!("{why}: the page runs on the CPU engine instead."),
        },
        Outcome::NoGpu(reason) => format!("No GPU engine to test: {reason}. The CPU engine runs."),
    };
    let table = match &outcome {
        Outcome::Ran(r) => Some(view! { <KernelTable report=r.clone()/> }),
        Outcome::NoGpu(_) => None,
    };
    view! {
        <section class="selftest" data-testid="selftest" data-result=outcome.result()>
            <h2>"On-device self-test"</h2>
            <p data-testid="selftest-verdict">{verdict}</p>
            {table}
            <button data-testid="copy-report" on:click=copy>"Copy report"</button>
            {move || copied.get().map(|ok| view! {
                <span class="note" role="status">{if ok { " copied: paste it into your bug report" } else { " select the report below and copy it" }}</span>
            })}
            <textarea data-testid="selftest-report" readonly rows="8" prop:value=text on:focus=select_all></textarea>
        </section>
    }
}

#[component]
fn KernelTable(report: Report) -> impl IntoView {
    let m = report.model.clone();
    let rows = per_kernel(report.profile, &report.kernels)
        .into_iter()
        .map(|(k, n, worst, ms, ok)| {
            view! {
                <tr data-kernel=k.name() data-pass=ok.to_string()>
                    <td>{k.name()}</td><td>{n}</td><td>{format!("{worst:.1e}")}</td>
                    <td>{format!("{ms:.1}")}</td><td>{if ok { "pass" } else { "FAIL" }}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <p class="note">{format!("adapter: {}", report.adapter)}</p>
        <table class="selftest-table">
            <thead><tr><th>"kernel"</th><th>"cases"</th><th>"max |GPU − CPU|"</th><th>"ms"</th><th>"result"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
        <p data-testid="selftest-model" data-pass=m.passed().to_string()>
            {format!(
                "Whole model, {} greedy steps: relative error {:.1e} (allowed {MODEL_REL_TOL:.0e}), same token {}/{} steps; GPU {:.1} ms/token, CPU {:.1} ms/token. {}",
                m.steps, m.rel_err, m.same_tokens, m.steps, m.gpu_ms_per_token, m.cpu_ms_per_token,
                if m.passed() { "pass" } else { "FAIL" }
            )}
        </p>
    }
}

//! One prompt decoded four ways with one seed, side by side. Each column has
//! its own temperature and top-k; the URL carries them as lists
//! (`temperature=0,0.3,0.8,1.2&top_k=0,0,10,100`).

use engine::run::{Job, Run};
use engine::sample::Settings;
use leptos::prelude::*;

use crate::controls::{range, ControlsPanel, NumberControl};
use crate::driver::Driver;
use crate::loader::yield_to_browser;
use crate::playground::PromptEditor;
use crate::route::{Control, Shown};
use crate::url_state::{query, Share};

/// greedy; low T; medium T + small k; higher T + larger k.
/// One column's (temperature, top-k) controls.
type Column = (RwSignal<f64>, RwSignal<f64>);

const DEFAULT_COLUMNS: [(f64, f64); 4] = [(0.0, 0.0), (0.3, 0.0), (0.8, 10.0), (1.2, 100.0)];
const NAMES: [&str; 4] = ["greedy", "low temperature", "medium T, small k", "higher T, larger k"];

/// The URL parameters this widget reads itself (the others must skip them).
pub fn compare_params() -> [&'static str; 2] {
    ["temperature", "top_k"]
}

/// The four columns' (temperature, top-k) from the URL lists, with notices.
fn columns_from_url(notices: &mut Vec<String>) -> [(f64, f64); 4] {
    let mut cols = DEFAULT_COLUMNS;
    for (name, r, which) in [("temperature", range::TEMPERATURE, 0), ("top_k", range::TOP_K, 1)] {
        let Some(raw) = query(name) else { continue };
        for (i, item) in raw.split(',').take(4).enumerate() {
            match r.read(item) {
                Ok(v) if which == 0 => cols[i].0 = v,
                Ok(v) => cols[i].1 = v.round(),
                Err(e) => notices.push(format!("{name} (column {}): {e}", i + 1)),
            }
        }
    }
    cols
}

#[component]
pub fn Compare(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let mut notices = Vec::new();
    let cols = columns_from_url(&mut notices);
    let columns: Vec<Column> =
        cols.iter().map(|&(t, k)| (RwSignal::new(t), RwSignal::new(k))).collect();
    let texts = RwSignal::new(vec![String::new(); 4]);
    // The columns travel in links as lists.
    if let Some(share) = use_context::<Share>() {
        let cols = columns.clone();
        Effect::new(move |_| {
            let list = |f: &dyn Fn(&Column) -> f64| {
                cols.iter().map(|c| f(c).to_string()).collect::<Vec<_>>().join(",")
            };
            share
                .extra
                .set(vec![("temperature", list(&|c| c.0.get())), ("top_k", list(&|c| c.1.get()))]);
        });
    }
    let cols = columns.clone();
    let run_all = move || {
        let cols: Vec<(f64, f64)> =
            cols.iter().map(|(t, k)| (t.get_untracked(), k.get_untracked())).collect();
        texts.set(vec![String::new(); 4]);
        d.launch(move |d| async move {
            for (i, (temperature, top_k)) in cols.into_iter().enumerate() {
                let settings = Settings { temperature, top_k: top_k as i64, ..Settings::default() };
                generate_into(d, settings, texts, i).await?;
            }
            Ok(())
        });
    };
    let panels = columns
        .into_iter()
        .enumerate()
        .map(|(i, (t, k))| view! {
            <section class="compare-column" data-testid="compare-column" data-column=i.to_string()>
                <h3>{NAMES[i]}</h3>
                <NumberControl label="Temperature" testid="compare-temperature" value=t range=range::TEMPERATURE/>
                <NumberControl label="Top-k" testid="compare-top-k" value=k range=range::TOP_K/>
                <div class="output" data-testid="compare-output">{move || texts.with(|t| t[i].clone())}</div>
            </section>
        })
        .collect_view();
    view! {
        <div class="widget-body compare">
            {(!notices.is_empty()).then(|| view! {
                <ul class="banner url-notices" role="status">{notices.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
            })}
            <section class="editor">
                {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <div class="buttons">
                    <button data-testid="generate" disabled=move || d.generating.get() on:click=move |_| run_all()>"Run all four"</button>
                    <button data-testid="stop" disabled=move || !d.generating.get() on:click=move |_| d.stop()>"Stop"</button>
                </div>
                {move || d.error.get().map(|e| view! { <p class="error" role="alert" data-testid="error">{e}</p> })}
            </section>
            <ControlsPanel controls=d.controls shown=shown/>
            <div class="compare-grid">{panels}</div>
        </div>
    }
}

/// Generates from the prompt with `settings` and the shared seed, streaming
/// the text into column `i`.
async fn generate_into(
    d: Driver,
    settings: Settings,
    texts: RwSignal<Vec<String>>,
    i: usize,
) -> Result<(), String> {
    let c = d.controls;
    let session = d.lab.with_value(|l| l.session())?;
    let tokenizer = d.lab.with_value(|l| l.tokenizer.clone());
    let job = Job { settings, stop: Vec::new(), ..c.job_untracked() };
    let prompt = d.prompt.get_untracked();
    let mut run =
        Run::start(session, &tokenizer, &prompt, &job).await.map_err(|e| e.to_string())?;
    while !d.stop_asked() {
        let step = run.step(&tokenizer, None).await.map_err(|e| e.to_string())?;
        texts.update(|t| t[i].push_str(&step.text));
        if step.done.is_some() {
            break;
        }
        yield_to_browser().await;
    }
    Ok(())
}

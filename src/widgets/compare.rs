//! One prompt decoded four ways with one seed, side by side. Each column has
//! its own temperature and top-k; the URL carries them as lists
//! (`temperature=0,0.3,0.8,1.2&top_k=0,0,10,100`).

use contract::{Control, Drives, Shown, Widget};
use engine::run::{Job, Run};
use engine::sample::Settings;
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::controls::{ControlsPanel, NumberControl};
use crate::driver::Driver;
use crate::playground::PromptEditor;
use crate::url_state::Share;

/// The controls each column sets for itself (seed and length are shared).
const COLUMN_CONTROLS: [Control; 2] = Widget::COMPARE_COLUMN_CONTROLS;

const NAMES: [&str; 4] = ["greedy", "low temperature", "medium T, small k", "higher T, larger k"];

/// One column's values of `COLUMN_CONTROLS`.
type Column = [RwSignal<f64>; 2];

/// The columns as the URL gave them (`Page::columns`), provided by the app.
#[derive(Clone, Copy)]
pub struct Columns(pub [[f64; 2]; 4]);

/// The shared settings with one column's values of `COLUMN_CONTROLS`.
fn column_settings(mut settings: Settings, column: [f64; 2]) -> Settings {
    for (control, v) in COLUMN_CONTROLS.into_iter().zip(column) {
        if let Drives::Setting(apply) = control.spec().drives {
            apply(&mut settings, v);
        }
    }
    settings
}

#[component]
pub fn Compare(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    // Read from the URL with the page's other values (contract::read_page).
    let cols = use_context::<Columns>().map_or(Widget::COMPARE_COLUMNS, |c| c.0);
    let columns: Vec<Column> = cols.iter().map(|c| c.map(RwSignal::new)).collect();
    let texts = RwSignal::new(vec![String::new(); 4]);
    // The columns travel in links as lists.
    if let Some(share) = use_context::<Share>() {
        let cols = columns.clone();
        Effect::new(move |_| {
            let lists = COLUMN_CONTROLS.into_iter().enumerate().map(|(j, control)| {
                let list: Vec<String> = cols.iter().map(|c| c[j].get().to_string()).collect();
                (control, list.join(","))
            });
            share.extra.set(lists.collect());
        });
    }
    let cols = columns.clone();
    let run_all = move || {
        let cols: Vec<[f64; 2]> = cols.iter().map(|c| c.map(|v| v.get_untracked())).collect();
        texts.set(vec![String::new(); 4]);
        d.launch(move |d| async move {
            for (i, column) in cols.into_iter().enumerate() {
                // Each column: plain sampling with its own values (the
                // playground's cuts and penalties are not part of this lesson).
                generate_into(d, column_settings(Settings::default(), column), texts, i).await?;
            }
            Ok(())
        });
    };
    let panels = columns
        .into_iter()
        .enumerate()
        .map(|(i, column)| view! {
            <section class="compare-column" data-testid="compare-column" data-column=i.to_string()>
                <h3>{NAMES[i]}</h3>
                {COLUMN_CONTROLS.into_iter().zip(column).map(|(control, value)| view! {
                    <NumberControl spec=control.spec() value=value testid_prefix="compare-"/>
                }).collect_view()}
                <div class="output" data-testid="compare-output">{move || texts.with(|t| t[i].clone())}</div>
            </section>
        })
        .collect_view();
    view! {
        <div class="widget-body compare">
            <section class="editor">
                {shown.get(Control::Prompt).map(|locked| view! { <PromptEditor driver=d locked=locked/> })}
                <div class="buttons">
                    <button data-testid="generate" disabled=move || d.generating.get() on:click=move |_| run_all()>"Run all four"</button>
                    <button data-testid="stop-generation" disabled=move || !d.generating.get() on:click=move |_| d.stop()>"Stop"</button>
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

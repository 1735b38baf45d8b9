//! "Same seed, same text" made visible: every finished generation in a table,
//! each marked with the earlier run it matches word for word.

use leptos::prelude::*;

use crate::driver::Driver;

#[component]
pub fn RunsTable(driver: Driver) -> impl IntoView {
    let runs = driver.runs;
    view! {
        <h2>"Runs"</h2>
        {move || runs.with(|r| r.is_empty()).then(|| view! {
            <p class="note">"Generate, then generate again with the same seed: the two texts match. Change the seed and they part."</p>
        })}
        <ol class="runs" data-testid="runs">
            {move || runs.get().into_iter().enumerate().map(|(i, run)| {
                let earlier = runs.with(|all| {
                    all[..i].iter().position(|r| r.seed == run.seed && r.settings == run.settings && r.prompt == run.prompt)
                        .map(|j| (j + 1, all[j].text == run.text))
                });
                let mark = match earlier {
                    Some((j, true)) => format!("same seed and settings as run {j}: identical text ✓"),
                    Some((j, false)) => format!("same seed and settings as run {j}, but different text"),
                    None => String::new(),
                };
                view! {
                    <li data-testid="run" data-seed=run.seed.to_string()
                        data-same-as=earlier.filter(|e| e.1).map(|e| e.0.to_string()).unwrap_or_default()>
                        <div class="run-head">{format!("seed {} · {}", run.seed, run.settings)}</div>
                        <div class="run-text">{run.text.clone()}</div>
                        {(!mark.is_empty()).then(|| view! { <div class="run-mark">{mark}</div> })}
                    </li>
                }
            }).collect_view()}
        </ol>
    }
}

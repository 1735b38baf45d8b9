//! How far a lesson's measurement is: the bar the measuring widgets show
//! while their figures fill in.

use leptos::prelude::*;

/// What is being measured, and how much of it is done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub what: String,
    pub done: usize,
    pub total: usize,
}

/// The bar, while `running` and something is counted.
#[component]
pub fn ProgressBar(
    progress: RwSignal<Progress>,
    running: Signal<bool>,
    testid: &'static str,
) -> impl IntoView {
    move || {
        let p = progress.get();
        (running.get() && p.total > 0).then(|| {
            view! {
                <div class="progress" data-testid=testid>
                    <progress max=p.total.to_string() value=p.done.to_string()></progress>
                    <span>{p.what}</span>
                </div>
            }
        })
    }
}

//! The question builder: a form whose fields are the link's own `q1.`
//! parameters, read by the same `contract::quiz::read` a link is, so what it
//! adds is exactly what a hand-written link would ask.

use contract::quiz::{self, setting_controls, Kind, Question};
use contract::{Control, Query};
use leptos::prelude::*;

/// The form's text fields, by their parameter names.
const FIELDS: [(&str, &str, &str); 6] = [
    ("prompt", "Prompt (the live model's next token)", "ROMEO:"),
    ("logits", "…or logits, comma-separated", "3,2,1,0.5,0.1"),
    ("labels", "Their labels", "the,a,an,this,some"),
    ("token", "prob: the token asked about (empty: the most likely)", ""),
    ("ask", "Question text (empty: worded from the settings)", ""),
    ("hint", "Hint", ""),
];

#[component]
pub fn Builder(add: Callback<Question>) -> impl IntoView {
    let kind = RwSignal::new("prob".to_string());
    let texts: Vec<(&'static str, &'static str, &'static str, RwSignal<String>)> =
        FIELDS.iter().map(|&(n, l, p)| (n, l, p, RwSignal::new(String::new()))).collect();
    let settings: Vec<(Control, RwSignal<String>)> =
        setting_controls().map(|c| (c, RwSignal::new(String::new()))).collect();
    let vary = RwSignal::new(Control::TopK.spec().name.to_string());
    let cache = RwSignal::new("off".to_string());
    let tol = RwSignal::new(String::new());
    let said = RwSignal::new(Vec::<String>::new());
    let (texts_v, settings_v) =
        (StoredValue::new(texts.clone()), StoredValue::new(settings.clone()));
    let submit = move || {
        let mut pairs = vec![("q1.kind".to_string(), kind.get_untracked())];
        let mut put = |name: &str, value: String| {
            if !value.trim().is_empty() {
                pairs.push((format!("q1.{name}"), value));
            }
        };
        texts_v.with_value(|t| t.iter().for_each(|(n, _, _, s)| put(n, s.get_untracked())));
        settings_v
            .with_value(|t| t.iter().for_each(|(c, s)| put(c.spec().name, s.get_untracked())));
        put("vary", vary.get_untracked());
        put("cache", cache.get_untracked());
        put("tol", tol.get_untracked());
        let mut notices = Vec::new();
        match quiz::read_question(&Query::from_pairs(pairs), 1, &mut notices) {
            Ok(q) => {
                add.run(q);
                notices.insert(0, "Added: the link and the embed code now ask it too.".into());
            }
            Err(why) => notices.insert(0, format!("Not added: {why}.")),
        }
        said.set(notices);
    };
    let kinds =
        Kind::ALL.iter().map(|(_, n)| view! { <option value=*n>{*n}</option> }).collect_view();
    let text_inputs = texts
        .into_iter()
        .map(|(name, label, placeholder, s)| {
            view! {
                <label>{label}
                    <input type="text" data-testid=format!("builder-{name}") placeholder=placeholder
                        prop:value=move || s.get() on:input=move |ev| s.set(event_target_value(&ev))/>
                </label>
            }
        })
        .collect_view();
    let setting_inputs = settings
        .into_iter()
        .map(|(c, s)| {
            view! {
                <label>{c.spec().label}
                    <input type="text" inputmode="decimal" data-testid=format!("builder-{}", c.spec().testid())
                        placeholder="off" title=c.spec().help
                        prop:value=move || s.get() on:input=move |ev| s.set(event_target_value(&ev))/>
                </label>
            }
        })
        .collect_view();
    let varies = setting_controls()
        .map(|c| view! { <option value=c.spec().name>{c.spec().label}</option> })
        .collect_view();
    view! {
        <details class="panel quiz-builder" data-testid="quiz-builder">
            <summary>"Write a question (for course authors)"</summary>
            <p class="note">"Each field is a parameter of the link (q1.kind, q1.prompt, q1.temperature, …; EMBEDDING.md lists them). The answer is never stored: the page computes it when the learner checks."</p>
            <div class="builder-grid">
                <label>"Kind"
                    <select data-testid="builder-kind" on:change=move |ev| kind.set(event_target_value(&ev))
                        prop:value=move || kind.get()>{kinds}</select>
                </label>
                {text_inputs}
                {setting_inputs}
                <label>"greedy: the setting the learner chooses"
                    <select data-testid="builder-vary" on:change=move |ev| vary.set(event_target_value(&ev))
                        prop:value=move || vary.get()>{varies}</select>
                </label>
                <label>"cost: the KV cache"
                    <select data-testid="builder-cache" on:change=move |ev| cache.set(event_target_value(&ev))
                        prop:value=move || cache.get()>
                        <option value="off">"off"</option><option value="on">"on"</option>
                    </select>
                </label>
                <label>"Tolerance (empty: the kind's own)"
                    <input type="text" inputmode="decimal" data-testid="builder-tol"
                        prop:value=move || tol.get() on:input=move |ev| tol.set(event_target_value(&ev))/>
                </label>
            </div>
            <button data-testid="builder-add" on:click=move |_| submit()>"Add question"</button>
            <ul class="notices" role="status" data-testid="builder-said">
                {move || said.get().into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
            </ul>
        </details>
    }
}

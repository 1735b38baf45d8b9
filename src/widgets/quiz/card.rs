//! One question: asked, answered, checked with the pipeline, then revealed.

use std::sync::Arc;

use contract::quiz::answer::{self, Dist, Given, Solution};
use contract::quiz::{Kind, On, Question};
use leptos::prelude::*;

use super::Card;
use crate::distribution::{visible, DistributionPanel, StepInput};
use crate::driver::Driver;

/// The check of one answer.
#[derive(Clone)]
struct Verdict {
    right: bool,
    solution: Arc<Solution>,
}

#[component]
pub fn QuestionCard(driver: Driver, card: Card, remove: Option<Callback<usize>>) -> impl IntoView {
    let d = driver;
    let q = StoredValue::new(card.question.clone());
    let input = card.input;
    let typed = RwSignal::new(String::new());
    let picked = RwSignal::new(None::<u32>);
    let verdict = RwSignal::new(None::<Verdict>);
    let problem = RwSignal::new(None::<String>);
    let kind = card.question.kind;
    let key = card.key;
    let check = move || {
        problem.set(None);
        // A stale verdict beside a new answer would read as its verdict.
        verdict.set(None);
        let q = q.get_value();
        let step = match input.get_untracked() {
            Some(Ok(step)) => step,
            Some(Err(e)) => return problem.set(Some(e)),
            None => return problem.set(Some("the model is still reading the prompt".into())),
        };
        let given = match kind {
            Kind::Top => match picked.get_untracked() {
                Some(id) => Given::Token(id),
                None => return problem.set(Some("choose a token first".into())),
            },
            _ => match answer::parse_number(&typed.get_untracked()) {
                Ok(v) => Given::Number(v),
                Err(e) => return problem.set(Some(e)),
            },
        };
        let checked = with_dist(d, &q, &step, |dist| {
            let s = answer::solve(&q, dist)?;
            let right = answer::check(&q, &s, given, dist);
            Ok::<_, String>(Verdict { right, solution: Arc::new(s) })
        });
        match checked {
            Ok(v) => verdict.set(Some(v)),
            Err(e) => problem.set(Some(e)),
        }
    };
    let answer_box = move || match kind {
        Kind::Top => view! { <Choices driver=d q=q input=input picked=picked/> }.into_any(),
        _ => view! {
            <label class="quiz-answer">"Your answer "
                <input type="text" inputmode="decimal" data-testid="quiz-answer" autocomplete="off"
                    prop:value=move || typed.get()
                    on:input=move |ev| typed.set(event_target_value(&ev))
                    on:keydown=move |ev| if ev.key() == "Enter" { check() }/>
            </label>
        }
        .into_any(),
    };
    let waiting = move || kind != Kind::Cost && input.with(Option::is_none);
    view! {
        <li class="quiz-card" data-testid="quiz-question" data-kind=kind.name()
            data-state=move || match verdict.get() { None => "open", Some(v) if v.right => "right", Some(_) => "wrong" }>
            <p class="quiz-ask" data-testid="quiz-ask">{card.question.asked()}</p>
            <Given q=card.question.clone()/>
            {(!card.question.hint.is_empty()).then(|| view! {
                <details class="quiz-hint"><summary>"Hint"</summary><p>{card.question.hint.clone()}</p></details>
            })}
            {move || input.get().and_then(Result::err).map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="quiz-row">
                {answer_box}
                <button data-testid="quiz-check" disabled=waiting on:click=move |_| check()>"Check"</button>
                {remove.map(|remove| view! {
                    <button class="quiet" data-testid="quiz-remove" aria-label="remove this question"
                        on:click=move |_| remove.run(key)>"Remove"</button>
                })}
            </div>
            <p role="status" class="quiz-verdict" data-testid="quiz-verdict">
                {move || problem.get().map(|p| view! { <span class="error">{p}</span> })}
                {move || verdict.get().map(|v| view! {
                    <strong>{if v.right { "✓ Right." } else { "✗ Not quite." }}</strong>
                    " The answer: " <span data-testid="quiz-solution">{v.solution.shown.clone()}</span>
                    {(!v.right && kind != Kind::Top && kind != Kind::Greedy)
                        .then(|| format!(" (within ±{})", q.with_value(|q| q.tolerance)))}
                })}
            </p>
            {move || verdict.get().map(|v| view! { <Reveal driver=d q=q verdict=v/> })}
        </li>
    }
}

/// What the question is asked on: the prompt or the logits, and the settings.
#[component]
fn Given(q: Question) -> impl IntoView {
    let on = match &q.on {
        _ if q.kind == Kind::Cost => None,
        On::Prompt(p) => Some(
            view! { <span>"The model's next token after "<code>{visible(p)}</code></span> }
                .into_any(),
        ),
        On::Logits { logits, labels } => {
            let pairs: Vec<String> = logits
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    format!("{} {l}", labels.get(i).cloned().unwrap_or_else(|| format!("#{i}")))
                })
                .collect();
            Some(view! { <span>"Logits: "<code>{pairs.join(", ")}</code></span> }.into_any())
        }
    };
    let settings = (q.kind != Kind::Cost).then(|| format!("; {}.", q.setting_words()));
    view! { <p class="quiz-given" data-testid="quiz-given">{on}{settings}</p> }
}

/// `top`'s answer: one of the likely tokens, as radio buttons (keyboard: arrows).
#[component]
fn Choices(
    driver: Driver,
    q: StoredValue<Question>,
    input: RwSignal<Option<Result<StepInput, String>>>,
    picked: RwSignal<Option<u32>>,
) -> impl IntoView {
    let d = driver;
    let name = format!("quiz-choice-{}", group_number());
    move || {
        let Some(Ok(step)) = input.get() else { return None };
        let q = q.get_value();
        let ids = with_dist(d, &q, &step, |dist| {
            answer::choices(&q, dist)
                .map(|ids| ids.into_iter().map(|id| (id, (dist.text)(id))).collect::<Vec<_>>())
        });
        let name = name.clone();
        Some(match ids {
            Err(e) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
            Ok(ids) => view! {
                <fieldset class="quiz-choices"><legend>"Your answer"</legend>
                    {ids.into_iter().map(|(id, text)| view! {
                        <label><input type="radio" name=name.clone() data-testid="quiz-choice" data-id=id.to_string()
                            on:change=move |_| picked.set(Some(id))/>{visible(&text)}</label>
                    }).collect_view()}
                </fieldset>
            }
            .into_any(),
        })
    }
}

/// A number unique on this page, for a radio group's name.
fn group_number() -> usize {
    thread_local!(static N: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    N.with(|n| {
        n.set(n.get() + 1);
        n.get()
    })
}

/// The worked answer and the bars of the step, the answer marked.
#[component]
fn Reveal(driver: Driver, q: StoredValue<Question>, verdict: Verdict) -> impl IntoView {
    let s = verdict.solution.clone();
    let worked = view! { <p class="quiz-worked" data-testid="quiz-worked">{s.worked.clone()}</p> };
    let Some(e) = s.explanation.clone() else { return worked.into_any() };
    let kept = e.stages.last().map_or(0, |st| st.kept_count);
    let bars = Signal::stored((kept + 1).clamp(5, 30));
    let e = Arc::new(e);
    let explanation = Memo::new(move |_| Some(Ok(e.clone())));
    let token_text = token_text(driver, q);
    let marked = Signal::stored(s.marked.clone());
    view! {
        {worked}
        <DistributionPanel explanation=explanation bars=bars token_text=token_text stop=None marked=Some(marked)/>
    }
    .into_any()
}

fn token_text(d: Driver, q: StoredValue<Question>) -> Callback<u32, String> {
    Callback::new(move |id: u32| q.with_value(|q| token_label(d, q, id)))
}

/// A token as the learner reads it: the question's label (or `#i`), or the
/// model's decoded text.
fn token_label(d: Driver, q: &Question, id: u32) -> String {
    match &q.on {
        On::Logits { labels, .. } => {
            labels.get(id as usize).cloned().unwrap_or_else(|| format!("#{id}"))
        }
        On::Prompt(_) => d.lab.with_value(|l| l.token_text(id)),
    }
}

/// Runs `f` on the question's distribution, with its tokens named as the
/// learner reads them and a token text resolved as the question means it.
fn with_dist<T>(d: Driver, q: &Question, step: &StepInput, f: impl FnOnce(&Dist) -> T) -> T {
    let labels: Vec<String> = match &q.on {
        On::Logits { labels, .. } => labels.clone(),
        On::Prompt(_) => Vec::new(),
    };
    let model = matches!(q.on, On::Prompt(_));
    let text = |id: u32| token_label(d, q, id);
    let vocab = step.logits.len();
    let resolve = |t: &str| -> Result<u32, String> {
        if model {
            let ids =
                d.lab.with_value(|l| l.tokenizer.encode_plain(t)).map_err(|e| e.to_string())?;
            match ids[..] {
                [id] => Ok(id),
                _ => Err(format!(
                    "“{t}” is {} tokens for this model: a question asks about one",
                    ids.len()
                )),
            }
        } else {
            let by_label = labels.iter().position(|l| l == t);
            let by_index = t.trim_start_matches('#').parse::<usize>().ok().filter(|&i| i < vocab);
            by_label
                .or(by_index)
                .map(|i| i as u32)
                .ok_or_else(|| format!("no token “{t}” among this question's labels"))
        }
    };
    f(&Dist { logits: &step.logits, history: &step.history, text: &text, resolve: &resolve })
}

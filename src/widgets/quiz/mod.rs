//! `quiz`: predict, then verify. The link holds the questions
//! (`contract::quiz`); each card takes the learner's answer, then computes
//! the answer with the sampling pipeline on the live model or the question's
//! own logits (`contract::quiz::answer`), checks it, and reveals the bars
//! with the answer marked. A builder writes new questions into the link.

mod builder;
mod card;

use std::sync::Arc;

use contract::quiz::{On, Question};
use contract::Shown;
use engine::Wanted;
use leptos::prelude::*;

use crate::distribution::StepInput;
use crate::driver::Driver;
use crate::url_state::Share;

/// The questions as the link gave them (`Page::quiz`), provided by the app.
#[derive(Clone)]
pub struct QuizQuestions(pub Vec<Question>);

/// One question on the page: a stable key (cards keep what was typed when
/// another is added or removed) and the step it is asked on, once read.
#[derive(Clone)]
pub struct Card {
    pub key: usize,
    pub question: Question,
    /// `None` until the model has read the prompt.
    pub input: RwSignal<Option<Result<StepInput, String>>>,
}

#[component]
pub fn Quiz(driver: Driver, shown: Shown) -> impl IntoView {
    let _ = shown; // the quiz has no playground controls
    let d = driver;
    let share = expect_context::<Share>();
    let cards = RwSignal::new(Vec::<Card>::new());
    let next_key = StoredValue::new(0usize);
    let add = move |q: Question| {
        let key = next_key.get_value();
        next_key.set_value(key + 1);
        let card = Card { key, question: q, input: RwSignal::new(None) };
        read_input(d, &card);
        cards.update(|c| c.push(card));
    };
    for q in use_context::<QuizQuestions>().map(|q| q.0).unwrap_or_default() {
        add(q);
    }
    // The link follows the questions on the page (the builder's, too).
    Effect::new(move |_| {
        let qs: Vec<Question> = cards.with(|c| c.iter().map(|c| c.question.clone()).collect());
        share.params.set(contract::quiz::to_params(&qs));
    });
    let remove =
        Callback::new(move |key: usize| cards.update(|c| c.retain(|card| card.key != key)));
    // An embed is for learners: the questions as the author wrote them, no builder.
    let authoring = !share.route.with_value(|r| r.embed);
    let score = move || {
        let n = cards.with(Vec::len);
        format!("{n} question{}", if n == 1 { "" } else { "s" })
    };
    view! {
        <div class="widget-body quiz">
            <p class="readout" data-testid="quiz-count">{score}</p>
            <ol class="quiz-questions">
                <For each=move || cards.get() key=|c| c.key let:card>
                    <card::QuestionCard driver=d card=card remove=authoring.then_some(remove)/>
                </For>
            </ol>
            {authoring.then(|| view! { <builder::Builder add=Callback::new(add)/> })}
        </div>
    }
}

/// Fills `card.input`: at once for logits, after the model reads the prompt
/// for a model question (one job at a time, after whatever runs now).
fn read_input(d: Driver, card: &Card) {
    let input = card.input;
    match &card.question.on {
        On::Logits { logits, .. } => {
            input.set(Some(Ok(StepInput::new(Arc::new(logits.clone()), Arc::new(Vec::new())))))
        }
        On::Prompt(prompt) => {
            let prompt = prompt.clone();
            d.launch_when_idle(move |d| async move {
                let got = next_after(d, &prompt).await;
                input.set(Some(got));
                Ok(())
            });
        }
    }
}

/// The model's next-token logits after `prompt` (a fresh session: the page's
/// own text and cache are left as they are).
async fn next_after(d: Driver, prompt: &str) -> Result<StepInput, String> {
    let (session, ids, n_positions) = d.lab.with_value(|l| {
        let ids = l.tokenizer.encode(prompt).map_err(|e| e.to_string());
        (l.session(), ids, l.model.config.n_positions)
    });
    let ids = ids?;
    if ids.is_empty() {
        return Err("this question's prompt is empty: the model needs at least one token".into());
    }
    if ids.len() >= n_positions {
        return Err(format!(
            "this question's prompt is {} tokens; the model reads at most {n_positions}",
            ids.len()
        ));
    }
    let mut session = session?;
    let logits = session.prefill(&ids, Wanted::Last).await.map_err(|e| e.to_string())?;
    Ok(StepInput::new(Arc::new(logits), Arc::new(ids)))
}

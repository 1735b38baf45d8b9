//! The same prompt, settings and seed written by two weight formats, token by
//! token side by side, the first token where they part highlighted.

use contract::Control;
use engine::run::Run;
use engine::storage::format::Format;
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::lab::open_like;

/// The two texts' tokens (id, text), A then B.
pub type Texts = RwSignal<[Vec<(u32, String)>; 2]>;

/// The format a choice control names (its options are the formats' names).
pub fn chosen(d: Driver, control: Control) -> Format {
    let name = d.controls.text(control).get_untracked();
    Format::from_name(&name).unwrap_or(Format::F32)
}

/// Writes text A, then text B, streaming each into `texts`.
pub async fn write_both(d: Driver, texts: Texts) -> Result<(), String> {
    texts.set([Vec::new(), Vec::new()]);
    let (engine, tokenizer) = d.lab.with_value(|l| (l.engine(), l.tokenizer.clone()));
    let job = d.controls.job_untracked();
    let prompt = d.prompt.get_untracked();
    for (i, control) in [Control::VariantA, Control::VariantB].into_iter().enumerate() {
        let format = chosen(d, control);
        let variant = d.lab.with_value(|l| l.variant(format))?;
        let session = open_like(&engine, variant).await?;
        let mut run =
            Run::start(session, &tokenizer, &prompt, &job).await.map_err(|e| e.to_string())?;
        while !d.stop_asked() {
            let step = run.step(&tokenizer, None).await.map_err(|e| e.to_string())?;
            let id = step.choice.token;
            let text = d.lab.with_value(|l| l.token_text(id));
            texts.update(|t| t[i].push((id, text)));
            if step.done.is_some() {
                break;
            }
            yield_to_browser().await;
        }
    }
    Ok(())
}

/// The first token index where the two texts differ, if they do.
pub fn first_difference(texts: &[Vec<(u32, String)>; 2]) -> Option<usize> {
    let [a, b] = texts;
    let n = a.len().min(b.len());
    (0..n).find(|&i| a[i].0 != b[i].0).or((a.len() != b.len()).then_some(n))
}

/// One text, its first differing token marked.
#[component]
fn TextColumn(texts: Texts, i: usize, control: Control, driver: Driver) -> impl IntoView {
    let tokens = move || {
        let t = texts.get();
        let first = first_difference(&t);
        t[i].iter()
            .enumerate()
            .map(|(k, (_, s))| {
                let diff = Some(k) == first;
                view! { <span class="token" class:first-diff=diff data-testid=diff.then_some("first-diff")>{s.clone()}</span> }
            })
            .collect_view()
    };
    let label = move || driver.controls.text(control).get();
    view! {
        <section class="compare-column" data-testid="quant-text" data-column=i.to_string()>
            <h3>{["Text A", "Text B"][i]}" · "{label}</h3>
            <div class="output">{tokens}</div>
        </section>
    }
}

/// Both texts and where they part.
#[component]
pub fn TextsPanel(driver: Driver, texts: Texts) -> impl IntoView {
    let verdict = move || {
        let t = texts.get();
        if t[1].is_empty() || driver.generating.get() {
            return String::new();
        }
        match first_difference(&t) {
            Some(k) => format!("The texts agree for {k} tokens and part at token {}.", k + 1),
            None => format!("The texts are identical for all {} tokens.", t[0].len()),
        }
    };
    view! {
        <div class="compare-grid">
            <TextColumn texts=texts i=0 control=Control::VariantA driver=driver/>
            <TextColumn texts=texts i=1 control=Control::VariantB driver=driver/>
        </div>
        <p class="readout" data-testid="quant-parting">{verdict}</p>
    }
}

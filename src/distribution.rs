//! The distribution panel, the core widget: the top N next tokens with their
//! raw probability (T = 1, no cuts) ghosted behind their final probability,
//! cut tokens struck through, one bar for "all the rest", entropy and kept
//! readouts, and the pipeline strip. Moving a control re-runs only
//! `engine::sample::explain` on stored logits, never the model.

use std::sync::{Arc, OnceLock};

use engine::sample::{explain, Explanation, Processor, Settings, StageKind};
use leptos::prelude::*;

/// The logits of one step and the history the processors see for it.
#[derive(Clone, Debug)]
pub struct StepInput {
    /// (vocab_size) raw logits from the model.
    pub logits: Arc<Vec<f32>>,
    /// (history_len) prompt + generated tokens before this step.
    pub history: Arc<Vec<u32>>,
    /// The explanation the run drew this step's token from, and the settings
    /// it ran under: shown as it is while the settings are those, so a
    /// generating page runs the pipeline once per token, not twice.
    drawn: Arc<OnceLock<(Settings, Arc<Explanation>)>>,
}

impl StepInput {
    pub fn new(logits: Arc<Vec<f32>>, history: Arc<Vec<u32>>) -> StepInput {
        StepInput { logits, history, drawn: Arc::default() }
    }

    /// Keeps `explanation`, made of this input under `settings` (the first one offered stays).
    pub fn offer(&self, settings: &Settings, explanation: Arc<Explanation>) {
        let _ = self.drawn.set((settings.clone(), explanation));
    }

    /// The explanation under `settings`: the one offered when its settings
    /// are these, else the pipeline's.
    pub fn explain(&self, settings: &Settings) -> Result<Arc<Explanation>, String> {
        match self.drawn.get() {
            Some((s, e)) if s == settings => Ok(e.clone()),
            _ => explain(&self.logits, &self.history, settings)
                .map(Arc::new)
                .map_err(|e| e.to_string()),
        }
    }
}

/// The same input: same logits after the same history (what was explained of it aside).
impl PartialEq for StepInput {
    fn eq(&self, other: &StepInput) -> bool {
        self.logits == other.logits && self.history == other.history
    }
}

/// One bar as drawn (and as the test hooks read it).
#[derive(Clone, Debug, PartialEq)]
struct Bar {
    id: u32,
    text: String,
    p_raw: f64,
    p: f64,
}

/// Visible whitespace, so `" the"` and `"\n"` can be told apart on a bar.
pub fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' => '␣',
            '\n' => '⏎',
            '\t' => '⇥',
            '\r' => '␍',
            c => c,
        })
        .collect()
}

/// The pipeline's explanation of `input` under `settings`, recomputed only
/// when either changes (dragging a control never re-runs the model).
pub type Explained = Memo<Option<Result<Arc<Explanation>, String>>>;

pub fn explained(input: Signal<Option<StepInput>>, settings: Signal<Settings>) -> Explained {
    Memo::new(move |_| Some(input.get()?.explain(&settings.get())))
}

/// The panel. `token_text` decodes one id; `on_pick`, when set, makes bars
/// clickable (you are the sampler).
#[component]
pub fn DistributionPanel(
    explanation: Explained,
    bars: Signal<usize>,
    token_text: Callback<u32, String>,
    #[prop(optional_no_strip)] on_pick: Option<Callback<u32>>,
    /// The stop strings, shown at the end of the pipeline strip when set.
    #[prop(optional_no_strip)]
    stop: Option<RwSignal<String>>,
    /// Tokens marked as a question's answer (the quiz's reveal).
    #[prop(optional_no_strip)]
    marked: Option<Signal<Vec<u32>>>,
) -> impl IntoView {
    let shown = Memo::new(move |_| match explanation.get() {
        Some(Ok(e)) => {
            let final_probs = e.final_probs();
            e.top(bars.get().max(1))
                .into_iter()
                .map(|id| Bar {
                    id,
                    text: token_text.run(id),
                    p_raw: e.raw_probs[id as usize],
                    p: final_probs[id as usize],
                })
                .collect()
        }
        _ => Vec::new(),
    });
    view! {
        <section class="distribution" aria-label="next-token distribution">
            {move || match explanation.get() {
                None => view! { <p class="note">"The next-token distribution appears once the prompt has been read."</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
                Some(Ok(e)) => view! { <Readouts e=e stop=stop/> }.into_any(),
            }}
            <ol class="bars">
                // Rebuilt whole on every change, not a keyed <For>: every bar's
                // key changes with each token or slider move anyway, and a long-
                // lived <For> keeps a dead reactive owner (~100 bytes) per removed
                // row until its parent is disposed (the long-session test found
                // 80 bytes per bar per token of wasm memory never freed).
                {move || shown.get().into_iter().map(|bar| {
                    let answer = marked.is_some_and(|m| m.with(|m| m.contains(&bar.id)));
                    view! { <BarRow bar=bar on_pick=on_pick answer=answer/> }
                }).collect_view()}
                {move || {
                    let bars = shown.get();
                    (!bars.is_empty()).then(|| {
                        let raw: f64 = 1.0 - bars.iter().map(|b| b.p_raw).sum::<f64>();
                        let fin: f64 = 1.0 - bars.iter().map(|b| b.p).sum::<f64>();
                        view! {
                            <li class="bar rest" data-testid="bar-rest">
                                <span class="label">"all the rest"</span>
                                <span class="track">
                                    <span class="raw" style:width=pct(raw.max(0.0))></span>
                                    <span class="final" style:width=pct(fin.max(0.0))></span>
                                </span>
                                <span class="value">{fmt_p(fin.max(0.0))}</span>
                            </li>
                        }
                    })
                }}
            </ol>
        </section>
    }
}

fn pct(p: f64) -> String {
    format!("{:.2}%", p * 100.0)
}

fn fmt_p(p: f64) -> String {
    if p >= 0.001 || p == 0.0 {
        format!("{:.1}%", p * 100.0)
    } else {
        format!("{p:.1e}")
    }
}

#[component]
fn BarRow(bar: Bar, on_pick: Option<Callback<u32>>, answer: bool) -> impl IntoView {
    let kept = bar.p > 0.0;
    let title = format!(
        "{:?}: raw {:.4}%, final {:.4}%{}",
        bar.text,
        bar.p_raw * 100.0,
        bar.p * 100.0,
        if answer { " (the answer)" } else { "" }
    );
    let id = bar.id;
    view! {
        <li
            class="bar"
            class:cut=!kept
            class:pickable=on_pick.is_some()
            class:answer=answer
            data-answer=answer.then_some("true")
            data-testid="bar"
            data-token=bar.text.clone()
            data-id=bar.id.to_string()
            data-p-raw=bar.p_raw.to_string()
            data-p=bar.p.to_string()
            data-kept=kept.to_string()
            title=title.clone()
        >
            // A pickable bar is still a list item; its button (over the whole
            // row) is what a keyboard or a screen reader reaches and presses.
            {on_pick.map(|pick| view! {
                <button type="button" class="bar-pick" aria-label=format!("choose {title}") on:click=move |_| pick.run(id)></button>
            })}
            <span class="label">{answer.then_some("★ ")}{visible(&bar.text)}</span>
            <span class="track">
                <span class="raw" style:width=pct(bar.p_raw)></span>
                <span class="final" style:width=pct(bar.p)></span>
            </span>
            <span class="value">{fmt_p(bar.p)}</span>
        </li>
    }
}

/// Entropy, kept count and mass, and what each stage removed: the strip
/// names each processor that is on (and how many tokens it changed), every
/// stage, and the stop strings that end the text after the draw.
#[component]
fn Readouts(e: Arc<Explanation>, stop: Option<RwSignal<String>>) -> impl IntoView {
    let last = e.stages.last().expect("the pipeline always has stages");
    let kept_mass: f64 = e.stages.iter().skip(2).map(|s| s.kept_mass).product();
    let effects = e
        .effects
        .iter()
        .map(|f| {
            let verb = if f.processor == Processor::NoRepeatNgram { "banned" } else { "changed" };
            view! {
                <li class="active processor" data-processor=f.processor.name()
                    title=format!("{} tokens {verb}", f.changed)>
                    <span class="stage-name">{f.processor.name().replace('_', "-")}</span>
                    <span class="stage-count">{format!("{} {verb}", f.changed)}</span>
                </li>
            }
        })
        .collect_view();
    let strip = e
        .stages
        .iter()
        // With processors on, their own items stand for the stage.
        .filter(|s| s.kind != StageKind::Processors || e.effects.is_empty())
        .map(|s| {
            let removed = s.removed.len();
            let active = removed > 0;
            view! {
                <li class:active=active data-stage=s.kind.name()
                    title=format!("{} kept, {} removed, {:.3} bits", s.kept_count, removed, s.entropy_bits)>
                    <span class="stage-name">{s.kind.name().replace('_', "-")}</span>
                    <span class="stage-count">{if removed > 0 { format!("−{removed}") } else { "·".to_string() }}</span>
                </li>
            }
        })
        .collect_view();
    let stops = move || {
        let raw = stop?.get();
        let n = raw.lines().filter(|l| !l.is_empty()).count();
        (n > 0).then(|| view! {
            <li class="active" data-stage="stop" title=format!("the text ends before: {}", raw.replace('\n', " | "))>
                <span class="stage-name">"stop"</span>
                <span class="stage-count">{format!("{n} string{}", if n == 1 { "" } else { "s" })}</span>
            </li>
        })
    };
    view! {
        <div class="readouts">
            <span data-testid="entropy-raw">"entropy " {format!("{:.3}", e.raw_entropy_bits)} " bits"</span>
            " → "
            <span data-testid="entropy-final">{format!("{:.3}", last.entropy_bits)} " bits"</span>
            <span data-testid="kept-count">" · kept " {last.kept_count}</span>
            // Every cut runs over the whole vocabulary (no top-50 truncation first).
            <span data-testid="vocab-size" data-n=e.raw_probs.len().to_string()>
                " of " {thousands(e.raw_probs.len())} " tokens"
            </span>
            <span data-testid="kept-mass">" · " {format!("{:.1}", kept_mass * 100.0)} "% of the tempered mass"</span>
        </div>
        <ol class="pipeline-strip" aria-label="pipeline" data-testid="pipeline-strip">
            <li><span class="stage-name">"raw"</span></li>
            {effects}
            {strip}
            <li><span class="stage-name">"final"</span></li>
            {stops}
        </ol>
    }
}

/// `50257` as `50,257`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

//! Generating under the budget: the chosen policy's cache (on the model with
//! its K/V heads in `kv_groups` groups, when set) and a full cache of the
//! model as loaded on this page's engine, fed the same tokens (drawn from the budgeted
//! model's distribution with the page's settings and seed). After each step
//! the held slots are read from the engine that holds them, and the two
//! next-token distributions are compared: KL(full ‖ budgeted) and whether
//! both put the same token first.

use engine::kv_policy::KvPolicy;
use engine::lessons::quality::DriftAcc;
use engine::run::{Job, Run};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::scroll::Scroll;
use crate::widgets::measuring::{err, prompt_ids, steps_in_room};

/// One step: the token it appended, how far the budgeted distribution was
/// from the full one when choosing it, and what the cache held after it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    pub token: String,
    pub kl: f64,
    pub same_top1: bool,
    /// The position in each cache slot after the step.
    pub held: Vec<usize>,
    /// (held) a heavy-hitter cache's attention totals (else empty).
    pub mass: Vec<f32>,
    /// The cache's bytes in use after the step.
    pub bytes: u64,
}

/// What the generation fills in.
#[derive(Clone, Copy, Default)]
pub struct Sinks {
    /// Every token's text: the prompt's, then the generated ones.
    pub texts: RwSignal<Vec<String>>,
    pub prompt_len: RwSignal<usize>,
    pub steps: RwSignal<Vec<StepRow>>,
    pub policy: RwSignal<Option<KvPolicy>>,
    /// The step the strip shows (`None`: the last).
    pub selected: RwSignal<Option<usize>>,
}

/// Generates `steps` tokens under `policy` beside the full cache.
pub async fn generate(
    d: Driver,
    sinks: Sinks,
    policy: KvPolicy,
    groups: usize,
    steps: usize,
) -> Result<(), String> {
    sinks.steps.set(Vec::new());
    sinks.selected.set(None);
    sinks.policy.set(Some(policy));
    let (ids, n_positions) = prompt_ids(d, "generation starts from it")?;
    let steps = steps_in_room(d, steps, n_positions - ids.len());
    let engine = super::engines::grouped(d, groups).await?;
    let (full, tokenizer) = d.lab.with_value(|l| (l.session(), l.tokenizer.clone()));
    let budgeted = engine.session().and_then(|s| s.with_kv_policy(policy)).map_err(err)?;
    let mut full = full?;
    let texts: Vec<String> =
        ids.iter().map(|&t| tokenizer.decode(&[t]).unwrap_or_default()).collect();
    sinks.prompt_len.set(ids.len());
    sinks.texts.set(texts);
    let job = Job { max_tokens: steps, stop: Vec::new(), ..d.controls.job_untracked() };
    let mut run = Run::start_ids(budgeted, ids.clone(), &job).await.map_err(err)?;
    let mut reference = full.prefill(&ids, engine::Wanted::Last).await.map_err(err)?;
    for _ in 0..steps {
        if d.stop_asked() {
            break;
        }
        let step = run.step(&tokenizer, None).await.map_err(err)?;
        let token = step.choice.token;
        let mut acc = DriftAcc::default();
        acc.add(&reference, &step.logits, token, 0);
        let drift = acc.finish();
        let (held, mass) = run.session().slots().await.map_err(err)?;
        let bytes = run.session().kv_bytes().await.map_err(err)?.in_use;
        let text = tokenizer.decode(&[token]).unwrap_or_default();
        sinks.texts.update(|t| t.push(text.clone()));
        sinks.steps.update(|s| {
            s.push(StepRow {
                token: text,
                kl: drift.kl_mean,
                same_top1: drift.same_top1 == 1.0,
                held,
                mass,
                bytes,
            })
        });
        if step.done.is_some() {
            break;
        }
        reference = full.decode(token).await.map_err(err)?;
        yield_to_browser().await;
    }
    Ok(())
}

/// The text as chips, one per token, at the chosen step: held (shaded by
/// its attention total under `heavy`), a sink (kept as one of the first),
/// or evicted; tokens not yet generated are left out.
#[component]
pub fn Strip(sinks: Sinks) -> impl IntoView {
    let at = move || {
        let n = sinks.steps.with(Vec::len);
        sinks.selected.get().filter(|&s| s < n).or(n.checked_sub(1))
    };
    let chips = move || {
        let step = at()?;
        let row = sinks.steps.with(|s| s[step].clone());
        let shown = sinks.prompt_len.get() + step + 1;
        let policy = sinks.policy.get();
        let sinks_kept = match policy {
            Some(KvPolicy::SinksWindow { sinks, .. }) => sinks,
            _ => 0,
        };
        // Under StreamingLLM's numbering a kept key is turned by its place among the kept.
        let renumbers = policy.is_some_and(KvPolicy::renumbers);
        let place = |pos: usize| row.held.iter().filter(|&&p| p < pos).count();
        let top = row.mass.iter().copied().fold(0.0f32, f32::max);
        let chips = sinks.texts.with(|texts| {
            texts
                .iter()
                .take(shown)
                .enumerate()
                .map(|(pos, text)| {
                    let slot = row.held.iter().position(|&p| p == pos);
                    let (state, title) = match slot {
                        None => ("evicted", format!("position {pos}: evicted")),
                        Some(_) if pos < sinks_kept => ("sink", format!("position {pos}: a sink, always kept")),
                        Some(_) if renumbers => ("kept", format!("position {pos}: kept, turned as place {} in the cache", place(pos))),
                        Some(s) => match row.mass.get(s) {
                            Some(m) => ("kept", format!("position {pos}: kept, attention received {m:.2}")),
                            None => ("kept", format!("position {pos}: kept")),
                        },
                    };
                    // Heavy hitters: the more attention received, the darker.
                    let shade = slot
                        .and_then(|s| row.mass.get(s))
                        .filter(|_| top > 0.0)
                        .map(|m| format!("--mass: {:.2}", m / top));
                    view! {
                        <span class=format!("kv-chip {state}") data-testid="kv-slot" data-state=state
                            data-pos=pos.to_string() title=title style=shade>{text.replace('\n', "↵")}</span>
                    }
                })
                .collect_view()
        });
        let kept = row.held.len();
        Some(view! {
            <p class="readout" data-testid="kv-held" data-kept=kept.to_string() data-bytes=row.bytes.to_string()>{format!(
                "Step {} of {}: the cache holds {kept} tokens ({} bytes); struck-out tokens were evicted.",
                step + 1,
                sinks.steps.with(Vec::len),
                row.bytes
            )}</p>
            <div class="kv-strip" data-testid="kv-strip">{chips}</div>
            <label class="step-pick">"Step "
                <input type="range" min="1" max=sinks.steps.with(Vec::len).to_string() value=(step + 1).to_string()
                    aria-label="the step the strip shows"
                    on:input=move |e| sinks.selected.set(event_target_value(&e).parse::<usize>().ok().map(|s| s.saturating_sub(1)))/>
            </label>
        })
    };
    view! { <div data-testid="kv-live">{chips}</div> }
}

/// Per step: the token, KL(full ‖ budgeted) and whether the top token is
/// the same; and their means over the run.
#[component]
pub fn StepTable(sinks: Sinks) -> impl IntoView {
    move || {
        let rows = sinks.steps.get();
        if rows.is_empty() {
            return None;
        }
        let n = rows.len() as f64;
        let mean_kl = rows.iter().map(|r| r.kl).sum::<f64>() / n;
        let same = rows.iter().filter(|r| r.same_top1).count() as f64 / n;
        let body = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                view! {
                    <tr data-testid="kv-step" data-kl=r.kl.to_string() data-same=r.same_top1.to_string()>
                        <td>{i + 1}</td>
                        <td class="token">{r.token.replace('\n', "↵")}</td>
                        <td>{format!("{:.4}", r.kl)}</td>
                        <td>{if r.same_top1 { "✓ same" } else { "✗ differs" }}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(view! {
            <p class="readout" data-testid="kv-step-means" data-mean-kl=mean_kl.to_string()>{format!(
                "Mean KL(full ‖ budgeted) {mean_kl:.4} nats; the same top token at {:.0} % of {} steps.",
                same * 100.0,
                rows.len()
            )}</p>
            <Scroll label="each step against the full cache">
                <table class="kv-steps">
                    <thead><tr><th>"Step"</th><th>"Token"</th><th>"KL (nats)"</th><th>"Top-1"</th></tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </Scroll>
        })
    }
}

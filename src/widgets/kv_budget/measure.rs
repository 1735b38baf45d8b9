//! Every policy over budgets, and every number of K/V head groups, measured
//! on the held-out passage the model ships (the bundled model's Macbeth; a
//! model without one is told so): bits per byte, mean KL(full ‖ variant) and
//! same top-1 against the full cache of the model as loaded, fed the same
//! tokens (`engine::lessons::kv_quality`), for budgets 8, 16, 32, … up to the model's
//! context and G = n_head … 1. Progress per run; Stop keeps the windows
//! finished.

use engine::kv_policy::Positions;
use engine::lessons::kv_quality::{measure as score, Progress as Done};
use engine::lessons::quality::Drift;
use leptos::prelude::*;

use super::engines::{divisors, grouped as grouped_engine};
use super::policy;
use crate::driver::Driver;
use crate::load::model_files::HELDOUT_FILE;
use crate::scroll::Scroll;
use crate::widgets::chart::{LineChart, Series};
use crate::widgets::measuring::Progress;

/// A policy as the lesson measures it: its `kv_policy=` name, its positions
/// (`kv_positions=`), and its series' name and CSS class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kind {
    policy: &'static str,
    positions: Positions,
    pub label: &'static str,
}

/// Every policy measured; StreamingLLM's numbering on rotary models only.
const KINDS: [Kind; 4] = [
    Kind { policy: "window", positions: Positions::Original, label: "window" },
    Kind { policy: "sinks", positions: Positions::Original, label: "sinks" },
    Kind { policy: "heavy", positions: Positions::Original, label: "heavy" },
    Kind { policy: "sinks", positions: Positions::Cache, label: "sinks-cache" },
];

/// One policy at one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub kind: Kind,
    pub budget: usize,
    pub drift: Drift,
}

/// What one scored run is: a policy at a budget, or G K/V groups (full cache).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    Policy(Kind, usize),
    Groups(usize),
}

#[derive(Clone, Copy, Default)]
pub struct Sinks {
    pub points: RwSignal<Vec<Point>>,
    /// (G, its drift) for G = n_head … 1.
    pub groups: RwSignal<Vec<(usize, Drift)>>,
    /// Why the K/V groups are not swept (a model grouped in training).
    pub groups_note: RwSignal<Option<String>>,
    pub progress: RwSignal<Progress>,
    /// The passage as scored (tokens, bytes), or why there is none.
    pub heldout: RwSignal<Option<Result<(usize, usize), String>>>,
}

/// 8, 16, 32, … below `n_positions`, then `n_positions`.
pub fn budgets(n_positions: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (3..).map(|k| 1 << k).take_while(|&b| b < n_positions).collect();
    out.push(n_positions);
    out
}

/// The held-out passage's text, or why there is none.
async fn passage(d: Driver) -> Result<String, String> {
    let source = d.lab.with_value(|l| l.source.clone());
    let place = source.place(HELDOUT_FILE);
    match source.get(HELDOUT_FILE, |_, _| {}).await {
        Ok(Some(bytes)) => {
            String::from_utf8(bytes).map_err(|_| format!("{place} is not UTF-8 text"))
        }
        Ok(None) => Err(format!("no held-out passage: the model folder has no {place}")),
        Err(e) => Err(format!("no held-out passage: {e}")),
    }
}

/// Scores every policy at every budget on the first `limit` tokens of the
/// passage (0: all of it).
pub async fn measure(d: Driver, sinks: Sinks, n_sinks: usize, limit: usize) -> Result<(), String> {
    sinks.points.set(Vec::new());
    sinks.groups.set(Vec::new());
    sinks.groups_note.set(None);
    sinks.heldout.set(None);
    let text = match passage(d).await {
        Ok(text) => text,
        Err(why) => {
            sinks.heldout.set(Some(Err(why)));
            return Ok(());
        }
    };
    let (tokenizer, config) = d.lab.with_value(|l| (l.tokenizer.clone(), l.model.config.clone()));
    let (n_positions, n_head, n_kv_head) = (config.n_positions, config.n_head, config.n_kv_head);
    let mut tokens = tokenizer.encode(&text).map_err(|e| e.to_string())?;
    if limit > 0 {
        tokens.truncate(limit);
    }
    if tokens.len() < 2 {
        sinks.heldout.set(Some(Err("the held-out passage has fewer than 2 tokens".into())));
        return Ok(());
    }
    let bytes = tokenizer.decode(&tokens).map_err(|e| e.to_string())?.len();
    sinks.heldout.set(Some(Ok((tokens.len(), bytes))));
    let rotary = config.llama().is_some();
    let kinds: Vec<Kind> =
        KINDS.into_iter().filter(|k| rotary || k.positions == Positions::Original).collect();
    let mut cases: Vec<Case> = budgets(n_positions)
        .into_iter()
        .flat_map(|b| kinds.iter().map(move |&kind| Case::Policy(kind, b)))
        .collect();
    let n_policies = cases.len();
    let mut grouped = Vec::new();
    // Pooling starts from a K/V head per query head: a model grouped in
    // training (the Llama family's) is scored by policy alone.
    let sweep = match n_kv_head == n_head {
        true => divisors(n_head),
        false => Vec::new(),
    };
    sinks.groups_note.set((n_kv_head != n_head).then(|| format!(
        "K/V groups are not swept: this model's {n_head} query heads already share {n_kv_head} K/V heads, grouped in training (pooling starts from a K/V head per query head)."
    )));
    for g in sweep {
        let what = format!("pooling the K/V heads into {g} groups");
        sinks.progress.set(Progress { what, done: 0, total: 1 });
        grouped.push(grouped_engine(d, g).await?);
        cases.push(Case::Groups(g));
    }
    let engine = d.lab.with_value(|l| l.engine());
    let open = |i: Option<usize>| match i {
        None => engine.session(),
        Some(i) => match cases[i] {
            Case::Policy(k, b) => {
                engine.session()?.with_kv_policy(policy(k.policy, b, n_sinks, k.positions))
            }
            Case::Groups(_) => grouped[i - n_policies].session(),
        },
    };
    let progress = |p: Done| {
        sinks.progress.set(Progress {
            what: format!("scoring the passage: run {} of {}", p.done, p.total),
            done: p.done,
            total: p.total,
        });
        !d.stop_asked()
    };
    let bytes_of = |t| tokenizer.token_bytes(t);
    let drifts =
        score(open, cases.len(), &tokens, bytes_of, progress).await.map_err(|e| e.to_string())?;
    let scored = cases.iter().zip(drifts).filter(|(_, d)| d.positions > 0);
    let (mut points, mut groups) = (Vec::new(), Vec::new());
    for (&case, drift) in scored {
        match case {
            Case::Policy(kind, budget) => points.push(Point { kind, budget, drift }),
            Case::Groups(g) => groups.push((g, drift)),
        }
    }
    sinks.points.set(points);
    sinks.groups.set(groups);
    Ok(())
}

/// The full cache's bits per byte over the same positions.
fn full_bits(d: &Drift) -> f64 {
    d.reference_nats_per_token * d.positions as f64 / std::f64::consts::LN_2 / d.bytes.max(1) as f64
}

/// One chart's series: each policy's `y` over budgets (those measured).
fn series(points: &[Point], y: impl Fn(&Drift) -> f64) -> Vec<Series> {
    KINDS
        .iter()
        .map(|kind| Series {
            name: kind.label.into(),
            class: kind.label,
            points: points
                .iter()
                .filter(|p| p.kind == *kind)
                .map(|p| (p.budget as f64, y(&p.drift)))
                .collect(),
            fit: None,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

#[component]
pub fn Curves(sinks: Sinks) -> impl IntoView {
    let bits = Signal::derive(move || {
        sinks.points.with(|p| {
            let mut s = series(p, Drift::bits_per_byte);
            if let Some(first) = p.first() {
                let full = full_bits(&first.drift);
                let ends = [p.iter().map(|q| q.budget).min(), p.iter().map(|q| q.budget).max()];
                let line = ends.iter().flatten().map(|&b| (b as f64, full)).collect();
                s.push(Series {
                    name: "full cache".into(),
                    class: "full",
                    points: line,
                    fit: None,
                });
            }
            s
        })
    });
    let kl = Signal::derive(move || sinks.points.with(|p| series(p, |d| d.kl_mean)));
    let about = move || {
        sinks.heldout.get().map(|h| match h {
            Ok((tokens, bytes)) => view! {
                <p class="legend" data-testid="kv-heldout">{format!(
                    "Scored on the held-out passage's first {tokens} tokens ({bytes} bytes), in windows of the context from an empty cache, each policy fed the same tokens as the full cache."
                )}</p>
            }.into_any(),
            Err(why) => view! { <p class="note" data-testid="kv-heldout">{why}</p> }.into_any(),
        })
    };
    let table =
        move || sinks.points.with(|points| (!points.is_empty()).then(|| policy_table(points)));
    let renumbered = move || {
        let any = sinks.points.with(|p| p.iter().any(|q| q.kind.positions == Positions::Cache));
        any.then(|| view! {
            <p class="legend" data-testid="kv-positions-note">"sinks-cache: the sinks policy with StreamingLLM's positions within the cache (each kept key turned by its place among the kept tokens); sinks: the same tokens kept at their original positions. The gap between the two curves is what renumbering does on this model."</p>
        })
    };
    let groups = move || sinks.groups.with(|rows| (!rows.is_empty()).then(|| groups_table(rows)));
    view! {
        {about}
        <div class="chart-pair">
            <div><h3>"Bits per byte"</h3><LineChart series=bits x_label="budget (tokens)" y_label="bits per byte" testid="kv-bits-chart"/></div>
            <div><h3>"KL from the full cache"</h3><LineChart series=kl x_label="budget (tokens)" y_label="KL (nats)" testid="kv-kl-chart"/></div>
        </div>
        {renumbered}
        {table}
        {groups}
        {move || sinks.groups_note.get().map(|n| view! { <p class="note" data-testid="kv-groups-note">{n}</p> })}
    }
}

/// Every policy at every budget measured so far (`points` not empty).
fn policy_table(points: &[Point]) -> impl IntoView {
    let rows = points
        .iter()
        .map(|p| {
            let d = &p.drift;
            view! {
                <tr data-testid="kv-curve-row" data-kind=p.kind.label data-budget=p.budget.to_string()
                    data-bits=d.bits_per_byte().to_string() data-kl=d.kl_mean.to_string()>
                    <td>{p.kind.label}</td><td>{p.budget}</td>
                    <td>{format!("{:.4}", d.bits_per_byte())}</td>
                    <td>{format!("{:.4}", d.kl_mean)}</td>
                    <td>{format!("{:.1} %", d.same_top1 * 100.0)}</td>
                </tr>
            }
        })
        .collect_view();
    let full = full_bits(&points[0].drift);
    view! {
        <p class="readout">{format!("The full cache: {full:.4} bits per byte.")}</p>
        <Scroll label="each policy at each budget">
            <table class="kv-curves" data-testid="kv-curves-table">
                <thead><tr><th>"Policy"</th><th>"Budget"</th><th>"Bits/byte"</th><th>"KL (nats)"</th><th>"Same top-1"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </Scroll>
    }
}

/// Each count of K/V groups measured so far (`rows` not empty).
fn groups_table(rows: &[(usize, Drift)]) -> impl IntoView {
    let body = rows
        .iter()
        .map(|(g, d)| {
            view! {
                <tr data-testid="kv-groups-row" data-groups=g.to_string()
                    data-bits=d.bits_per_byte().to_string() data-kl=d.kl_mean.to_string()>
                    <td>{*g}</td>
                    <td>{format!("{:.4}", d.bits_per_byte())}</td>
                    <td>{format!("{:.4}", d.kl_mean)}</td>
                    <td>{format!("{:.1} %", d.same_top1 * 100.0)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Fewer K/V heads: each group's K and V pooled, full cache"</h3>
        <p class="legend">"The cache shrinks by n_head / G. Pooled from a model trained with a K/V head per query head, without the uptraining Ainslie et al. give it afterwards."</p>
        <table class="kv-curves" data-testid="kv-groups-table">
            <thead><tr><th>"K/V groups G"</th><th>"Bits/byte"</th><th>"KL (nats)"</th><th>"Same top-1"</th></tr></thead>
            <tbody>{body}</tbody>
        </table>
    }
}

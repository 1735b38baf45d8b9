//! The pipeline widget: the same tokens after every stage, side by side in
//! the order the sampler applies them (raw → processors → temperature →
//! top-k → top-p → min-p = final). A cell is empty once a stage has cut it.

use leptos::prelude::*;

use crate::distribution::{visible, Explained};

/// One token's row: its probability after each stage.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    id: u32,
    text: String,
    raw: f64,
    /// (stages) probability after each stage.
    stages: Vec<f64>,
}

#[component]
pub fn PipelineTable(
    explanation: Explained,
    bars: Signal<usize>,
    token_text: Callback<u32, String>,
) -> impl IntoView {
    move || match explanation.get() {
        None => view! { <p class="note">"The stages appear once the prompt has been read."</p> }
            .into_any(),
        Some(Err(e)) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
        Some(Ok(e)) => {
            let rows: Vec<Row> = e
                .top(bars.get().max(1))
                .into_iter()
                .map(|id| Row {
                    id,
                    text: token_text.run(id),
                    raw: e.raw_probs[id as usize],
                    stages: e.stages.iter().map(|s| s.probs[id as usize]).collect(),
                })
                .collect();
            // One scale for the whole table, so columns compare at a glance.
            let scale = rows
                .iter()
                .flat_map(|r| r.stages.iter().chain([&r.raw]))
                .fold(1e-12_f64, |m, &p| m.max(p));
            let heads = e.stages.iter().map(|s| {
                let title = format!("{} kept, {} removed, {:.3} bits", s.kept_count, s.removed.len(), s.entropy_bits);
                view! {
                    <th scope="col" title=title data-stage=s.kind.name()>
                        {s.kind.name().replace('_', "-")}
                        <span class="stage-count">{format!("{} kept · {:.2} bits", s.kept_count, s.entropy_bits)}</span>
                    </th>
                }
            }).collect_view();
            let body = rows.into_iter().map(|r| {
                let p_final = r.stages.last().copied().unwrap_or(0.0);
                let cells = r.stages.iter().zip(&e.stages).map(|(&p, s)| view! {
                    <td data-stage=s.kind.name() data-p=p.to_string() class:cut=p == 0.0><Cell p=p scale=scale/></td>
                }).collect_view();
                view! {
                    <tr data-testid="bar" data-token=r.text.clone() data-id=r.id.to_string()
                        data-p-raw=r.raw.to_string() data-p=p_final.to_string() data-kept=(p_final > 0.0).to_string()>
                        <th scope="row" class="label">{visible(&r.text)}</th>
                        <td data-stage="raw" data-p=r.raw.to_string()><Cell p=r.raw scale=scale/></td>
                        {cells}
                    </tr>
                }
            }).collect_view();
            view! {
                <div class="pipeline-table-wrap">
                    <table class="pipeline-table" data-testid="pipeline">
                        <thead><tr>
                            <th scope="col">"token"</th>
                            <th scope="col" data-stage="raw">"raw"<span class="stage-count">{format!("{:.2} bits", e.raw_entropy_bits)}</span></th>
                            {heads}
                        </tr></thead>
                        <tbody>{body}</tbody>
                    </table>
                </div>
                <p class="note">"Each column is the distribution after that stage, renormalised; the last is what the sampler draws from. An empty cell: cut by that stage or one before it."</p>
            }
            .into_any()
        }
    }
}

#[component]
fn Cell(p: f64, scale: f64) -> impl IntoView {
    (p > 0.0).then(|| {
        view! {
            <span class="cell-bar" style:width=format!("{:.1}%", 100.0 * p / scale)></span>
            <span class="cell-value">{format!("{:.1}%", p * 100.0)}</span>
        }
    })
}

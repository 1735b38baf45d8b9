//! A box that scrolls sideways (a wide table, tree or chart): focusable and
//! named, so a keyboard can scroll it and a screen reader announces what it
//! holds (WCAG 2.1.1; axe's `scrollable-region-focusable`). Every such box
//! on the page is this one component; a box holding a table also offers it
//! as a CSV file (what it shows, cell for cell).

use leptos::html::Div;
use leptos::prelude::*;

use crate::csv::{save, slug, table_csv};
use crate::png::CopyPng;

#[component]
pub fn Scroll(
    /// What the box holds, as a screen reader announces it (and the CSV's name).
    #[prop(into)]
    label: String,
    /// Its CSS class (how it scrolls and sizes).
    #[prop(default = "table-scroll")]
    class: &'static str,
    /// Whether it holds a table to offer as CSV.
    #[prop(default = true)]
    csv: bool,
    children: Children,
) -> impl IntoView {
    let node = NodeRef::<Div>::new();
    let file = format!("decode-lab-{}.csv", slug(&label));
    let table = Callback::new(move |()| node.get()?.query_selector("table").ok().flatten());
    let download = move |_| {
        if let Some(table) = node.get().and_then(|d| d.query_selector("table").ok().flatten()) {
            save(&file, &table_csv(&table));
        }
    };
    view! {
        <div class=class tabindex="0" role="region" aria-label=label.clone() node_ref=node>{children()}</div>
        {csv.then(|| view! {
            <div class="exports">
                <button type="button" class="export" data-testid="download-csv" aria-label=format!("Download CSV: {label}") on:click=download>"Download CSV"</button>
                <CopyPng find=table label=label.clone()/>
            </div>
        })}
    }
}

/// A table of measured figures in a [`Scroll`] box named `label`: its
/// caption (if any), a header per column, and the rows.
#[component]
pub fn FigureTable(
    #[prop(into)] label: String,
    /// The table's `data-testid`.
    testid: &'static str,
    #[prop(optional)] caption: Option<&'static str>,
    columns: &'static [&'static str],
    /// The `<tr>`s.
    children: Children,
) -> impl IntoView {
    let heads = columns.iter().map(|c| view! { <th scope="col">{*c}</th> }).collect_view();
    view! {
        <Scroll label=label><table class="figures" data-testid=testid>
            {caption.map(|c| view! { <caption>{c}</caption> })}
            <thead><tr>{heads}</tr></thead>
            <tbody>{children()}</tbody>
        </table></Scroll>
    }
}

//! A box that scrolls sideways (a wide table, tree or chart): focusable and
//! named, so a keyboard can scroll it and a screen reader announces what it
//! holds (WCAG 2.1.1; axe's `scrollable-region-focusable`). Every such box
//! on the page is this one component; a box holding a table also offers it
//! as a CSV file (what it shows, cell for cell).

use leptos::html::Div;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

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

/// `label` as a file name: lower-case words joined by `-`.
pub(crate) fn slug(label: &str) -> String {
    let words = label.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
    words.map(str::to_lowercase).collect::<Vec<_>>().join("-")
}

/// A table's rows (head and body) as CSV: each cell's text, quoted where it
/// holds a comma, a quote or a line break (RFC 4180).
pub(crate) fn table_csv(table: &web_sys::Element) -> String {
    let Ok(rows) = table.query_selector_all("tr") else { return String::new() };
    let mut out = String::new();
    for i in 0..rows.length() {
        let Some(row) = rows.item(i).and_then(|r| r.dyn_into::<web_sys::Element>().ok()) else {
            continue;
        };
        let cells = row.children();
        let line: Vec<String> = (0..cells.length())
            .filter_map(|j| cells.item(j))
            .map(|c| quote(c.text_content().unwrap_or_default().trim()))
            .collect();
        out += &line.join(",");
        out += "\r\n";
    }
    out
}

fn quote(cell: &str) -> String {
    match cell.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", cell.replace('"', "\"\"")),
        false => cell.to_string(),
    }
}

/// Saves `text` as a file named `name` (a link the page clicks for the reader).
pub(crate) fn save(name: &str, text: &str) {
    let href = format!("data:text/csv;charset=utf-8,{}", js_sys::encode_uri_component(text));
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let Ok(link) = doc.create_element("a") else { return };
    let _ = link.set_attribute("href", &href);
    let _ = link.set_attribute("download", name);
    if let Some(link) = link.dyn_ref::<web_sys::HtmlElement>() {
        link.click();
    }
}

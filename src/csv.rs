//! A table as a file the reader keeps: its cells as CSV (RFC 4180), saved
//! under a name made from the table's label. The box that scrolls and the
//! chart offer it; Copy as PNG names its file the same way.

use wasm_bindgen::JsCast;

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

/// `cell` as one CSV cell: quoted where it holds a comma, a quote or a line break.
pub(crate) fn quote(cell: &str) -> String {
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

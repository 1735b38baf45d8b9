//! Every head in numbers (entropy, how far back it looks, its weight on the
//! first and on the previous token) with the label a student would give it,
//! and the chosen head's map as CSV and PNG.

use engine::lessons::heads::{head_stats, label};
use leptos::html::Canvas;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::canvas::shown;
use super::compute::Maps;
use crate::driver::Driver;
use crate::scroll::Scroll;
use crate::widgets::chart::ChartTable;

#[component]
pub fn HeadTable(maps: RwSignal<Maps>, pick: Callback<(usize, usize)>) -> impl IntoView {
    let rows = move || {
        maps.with(|m| {
            let n = m.n();
            (0..m.n_layer)
                .flat_map(|l| (0..m.n_head).map(move |h| (l, h)))
                .map(|(l, h)| {
                    let s = head_stats(m.head(l, h), n, 0);
                    let name = label(&s).unwrap_or("");
                    view! {
                        <tr data-testid="head-row" data-layer=l.to_string() data-head=h.to_string() data-label=name
                            data-first=format!("{:.4}", s.first) data-previous=format!("{:.4}", s.previous)
                            on:click=move |_| pick.run((l, h))>
                            <th>{format!("L{l} H{h}")}</th>
                            <td>{format!("{:.2}", s.entropy_bits)}</td><td>{format!("{:.2}", s.look_back)}</td>
                            <td>{format!("{:.0} %", s.first * 100.0)}</td><td>{format!("{:.0} %", s.previous * 100.0)}</td>
                            <td>{if name.is_empty() { "—" } else { name }}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <Scroll label="each head's readouts"><table class="figures" data-testid="head-table">
            <thead><tr>
                <th>"head"</th><th>"entropy (bits)"</th><th>"looks back (tokens)"</th>
                <th>"on the first token"</th><th>"on the previous token"</th><th>"label"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></Scroll>
        <p class="legend">"Means over the query rows of the weights as computed (the first token kept). A label when one thing takes over half the weight: previous-token head, sink head (the first token), self head; — when nothing does."</p>
    }
}

/// The chosen head's map as CSV (one line per query and visible key) and PNG.
#[component]
pub fn Exports(
    driver: Driver,
    maps: RwSignal<Maps>,
    chosen: Signal<(usize, usize)>,
    hide: Signal<bool>,
    canvas: NodeRef<Canvas>,
) -> impl IntoView {
    let d = driver;
    let csv = move || {
        let (l, h) = chosen.get();
        let text = |t: u32| d.lab.with_value(|lab| lab.token_text(t)).replace('"', "\"\"");
        maps.with(|m| {
            let (n, w) = (m.n(), shown(m, l, h, hide.get()));
            let mut out = String::from("layer,head,query,key,query_token,key_token,weight\n");
            for i in 0..n {
                for j in 0..=i {
                    let (q, k) = (text(m.tokens[i]), text(m.tokens[j]));
                    out += &format!("{l},{h},{i},{j},\"{q}\",\"{k}\",{}\n", w[i * n + j]);
                }
            }
            format!("data:text/csv;charset=utf-8,{}", js_sys::encode_uri_component(&out))
        })
    };
    let name = move |ext: &str| {
        let (l, h) = chosen.get();
        format!("attention-L{l}-H{h}.{ext}")
    };
    // The PNG is the canvas as it is when clicked.
    let png = move |ev: web_sys::MouseEvent| {
        let (Some(c), Some(a)) = (canvas.get_untracked(), ev.current_target()) else { return };
        if let (Ok(url), Ok(a)) = (c.to_data_url(), a.dyn_into::<web_sys::Element>()) {
            let _ = a.set_attribute("href", &url);
        }
    };
    // The chosen map as a table (the canvas's text alternative): row i is where token i looks.
    let table = move || {
        let (l, h) = chosen.get();
        let text = |t: u32| d.lab.with_value(|lab| lab.token_text(t));
        maps.with(|m| {
            let (n, w) = (m.n(), shown(m, l, h, hide.get()));
            let keys = m.tokens[..n].iter().map(|&t| text(t));
            let head = std::iter::once("query \\ key".to_string()).chain(keys).collect();
            let rows = (0..n)
                .map(|i| {
                    let cells = (0..n).map(|j| match j <= i {
                        true => format!("{:.3}", w[i * n + j]),
                        false => String::new(),
                    });
                    std::iter::once(text(m.tokens[i])).chain(cells).collect()
                })
                .collect();
            let caption =
                format!("layer {l}, head {h}: each row's weights over the tokens it sees");
            view! { <ChartTable caption=caption head=head rows=rows/> }
        })
    };
    view! {
        {table}
        <div class="buttons">
            <a class="button" data-testid="export-csv" href=csv download=move || name("csv")>"Export CSV"</a>
            <a class="button" data-testid="export-png" href="#" download=move || name("png") on:click=png>"Export PNG"</a>
        </div>
    }
}

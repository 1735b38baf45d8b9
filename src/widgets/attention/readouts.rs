//! Every head in numbers (entropy, how far back it looks, its weight on the
//! first and on the previous token) with the label a student would give it,
//! and the chosen head's map as CSV and PNG.

use engine::lessons::heads::{head_stats, label};
use leptos::prelude::*;

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

/// The chosen head's map as a table behind "Show as table", with the
/// chart's Copy as PNG and a Download CSV of every weight it shows: one line
/// per query and visible key, at full precision, with its layer, head and
/// tokens (the table's cells are rounded for reading).
#[component]
pub fn MapTable(
    driver: Driver,
    maps: RwSignal<Maps>,
    chosen: Signal<(usize, usize)>,
    hide: Signal<bool>,
) -> impl IntoView {
    let d = driver;
    let csv = Callback::new(move |()| {
        let (l, h) = chosen.get_untracked();
        maps.with_untracked(|m| {
            let (n, w) = (m.n(), shown(m, l, h, hide.get_untracked()));
            // Each token's cell once, not once per line it stands in (n² / 2 lines).
            let cells: Vec<String> = d.lab.with_value(|lab| {
                m.tokens[..n].iter().map(|&t| crate::csv::quote(&lab.token_text(t))).collect()
            });
            let mut out = String::from("layer,head,query,key,query_token,key_token,weight\r\n");
            for i in 0..n {
                for j in 0..=i {
                    let (q, k) = (&cells[i], &cells[j]);
                    out += &format!("{l},{h},{i},{j},{q},{k},{}\r\n", w[i * n + j]);
                }
            }
            out
        })
    });
    // The chosen map as a table (the canvas's text alternative): row i is where token i looks.
    move || {
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
            view! { <ChartTable caption=caption head=head rows=rows csv=csv/> }
        })
    }
}

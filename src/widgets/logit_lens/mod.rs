//! `logit-lens`: what the model would predict if it stopped after each
//! block. A grid of prompt positions × layers (the embedding, then after
//! every block), each cell the lens's top token and its probability, read
//! live from the loaded model on the page's engine; a click shows the
//! cell's top 10 (and puts the cell in the link); where each position's
//! final answer first takes the top place, and keeps it, is marked.

mod compute;

use contract::{Control, Shown};
use leptos::prelude::*;

use crate::browser::debounced;
use crate::distribution::visible;
use crate::driver::Driver;
use crate::scroll::Scroll;
use crate::widgets::measuring::{MeasureEditor, Progress};
use compute::{Grid, TOP};

/// The chosen (layer, position), from the controls, clamped into the grid.
fn chosen(grid: &Grid, layer: f64, position: f64) -> Option<(usize, usize)> {
    let n = grid.tokens.len();
    let last_layer = grid.layers.checked_sub(1)?;
    let p = match position as usize {
        0 => n.checked_sub(1)?,
        p => p.min(n) - 1,
    };
    Some((((layer as usize).min(last_layer)), p))
}

#[component]
pub fn LogitLens(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let grid = RwSignal::new(Grid::default());
    let progress = RwSignal::new(Progress::default());
    // After whatever the driver is doing (the page reads the prompt once
    // it loads, and Stop would end a read launched beside it).
    let read = move || d.launch_when_idle(move |d| compute::compute(d, grid, progress));
    read();
    // Follow the prompt as it is edited (once typing pauses).
    let reread = debounced(400, read);
    Effect::new(move |prev: Option<()>| {
        d.prompt.track();
        if prev.is_some() {
            reread();
        }
    });
    let (layer, position) = (c.number(Control::LensLayer), c.number(Control::LensPosition));
    let pick = Callback::new(move |(l, p): (usize, usize)| {
        layer.set(l as f64);
        position.set((p + 1) as f64);
    });
    // The layer's default (its range's top) means "the last"; position 0 too.
    let limited = move || {
        grid.with(|g| {
            let Some(last) = g.layers.checked_sub(1) else { return Vec::new() };
            let n = g.tokens.len();
            let (l, p) = (layer.get().trunc(), position.get().trunc());
            let layer_spec = Control::LensLayer.spec();
            let top = match layer_spec.input {
                contract::Input::Number { range, .. } => range.max,
                _ => f64::MAX,
            };
            let layers = format!("the lens's layers 0–{last}");
            let tokens = format!("the prompt's {n} tokens");
            let notices = [
                (l != top).then(|| layer_spec.limited(l, l.min(last as f64), &layers)).flatten(),
                Control::LensPosition.spec().limited(p, p.min(n as f64), &tokens),
            ];
            notices.into_iter().flatten().collect()
        })
    };
    view! {
        <div class="widget-body logit-lens">
            <MeasureEditor driver=d shown=shown progress=progress testid="lens-progress">
                <button data-testid="read-lens" disabled=move || d.generating.get() on:click=move |_| read()>"Read again"</button>
            </MeasureEditor>
            <section class="panel">
                <p class="legend">{"Rows: the residual stream after the embedding and after each block, read through ln_f and the LM head. Columns: the prompt's tokens; each cell predicts the token after its column. ★: where the final answer first takes the top place and keeps it."}</p>
                {move || limited().into_iter().map(|m| view! { <p class="notice" role="status" data-testid="limit-notice">{m}</p> }).collect_view()}
                <LensTable driver=d grid=grid pick=pick/>
                <Summary driver=d grid=grid/>
                <TopList driver=d grid=grid/>
            </section>
        </div>
    }
}

/// The grid itself.
#[component]
fn LensTable(
    driver: Driver,
    grid: RwSignal<Grid>,
    pick: Callback<(usize, usize)>,
) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let text = move |id: u32| visible(&d.lab.with_value(|l| l.token_text(id)));
    move || {
        let g = grid.get();
        let sel =
            chosen(&g, c.number(Control::LensLayer).get(), c.number(Control::LensPosition).get());
        let head =
            g.tokens.iter().map(|&t| view! { <th class="token">{text(t)}</th> }).collect_view();
        let rows = (0..g.layers).map(|l| {
            let name = if l == 0 { "embedding".to_string() } else { format!("block {l}") };
            let cells = (0..g.tokens.len()).map(|p| {
                let Some(cell) = g.cell(l, p) else { return view! { <td class="pending"></td> }.into_any() };
                let settles = g.done() && g.settles_at(p) == Some(l);
                let (token, prob) = (cell.token(), cell.p());
                view! {
                    <td data-testid="lens-cell" data-layer=l.to_string() data-position=(p + 1).to_string()
                        data-token=token.to_string() data-p=format!("{prob:.6}")
                        class:selected=sel == Some((l, p)) class:settles=settles
                        style:background-color=format!("rgb(37 99 235 / {:.3})", prob * 0.75) title=format!("p = {prob:.4}")
                        on:click=move |_| pick.run((l, p))>
                        <span class="token">{text(token)}</span>{settles.then_some(" ★")}
                    </td>
                }
                .into_any()
            }).collect_view();
            view! { <tr><th>{name}</th>{cells}</tr> }
        }).collect_view();
        view! {
            <Scroll label="the logit lens grid: positions by layers"><table class="lens" data-testid="lens-grid">
                <thead><tr><th>"after"</th>{head}</tr></thead>
                <tbody>{rows}</tbody>
            </table></Scroll>
        }
    }
}

/// Where the answer at the last position forms.
#[component]
fn Summary(driver: Driver, grid: RwSignal<Grid>) -> impl IntoView {
    let d = driver;
    move || {
        let g = grid.get();
        if !g.done() {
            return None;
        }
        let p = g.tokens.len() - 1;
        let (last, at) = (g.layers - 1, g.settles_at(p)?);
        let answer = g.cell(last, p)?;
        let token = visible(&d.lab.with_value(|l| l.token_text(answer.token())));
        let when = match at {
            0 => "already at the embedding".to_string(),
            k if k == last => format!("only after the last block ({k})"),
            k => format!("after block {k} of {last}, and keeps it"),
        };
        Some(view! {
            <p class="readout" data-testid="lens-summary" data-token=answer.token().to_string() data-settles=at.to_string()>
                {format!("The next token's top pick, “{token}” (p = {:.3}), takes the top place {when}.", answer.p())}
            </p>
        })
    }
}

/// The chosen cell's top 10.
#[component]
fn TopList(driver: Driver, grid: RwSignal<Grid>) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    move || {
        let g = grid.get();
        let (l, p) =
            chosen(&g, c.number(Control::LensLayer).get(), c.number(Control::LensPosition).get())?;
        let cell = g.cell(l, p)?.clone();
        let after = if l == 0 { "the embedding".to_string() } else { format!("block {l}") };
        let rows = cell.top.iter().map(|&(id, prob)| {
            let text = visible(&d.lab.with_value(|lab| lab.token_text(id)));
            view! {
                <tr data-testid="lens-top-row" data-token=id.to_string() data-p=format!("{prob:.6}")>
                    <td class="token">{text}</td><td>{format!("{prob:.4}")}</td>
                </tr>
            }
        }).collect_view();
        Some(view! {
            <h3 data-testid="lens-top-title">{format!("Top {TOP} at position {} after {after}", p + 1)}</h3>
            <table class="figures" data-testid="lens-top"><tbody>{rows}</tbody></table>
        })
    }
}

//! `attention`: where each token looks, in every head of every layer, read
//! live from the loaded model on the page's engine (never precomputed). A
//! grid of small maps (row i: token i's weights over the tokens so far),
//! the chosen head's map large with the text tinted by the hovered row, a
//! switch that sets the first token (the attention sink) aside, every head's
//! readouts and label, and the chosen map as CSV or PNG. "Generate and
//! watch" grows the maps token by token.

mod canvas;
mod compute;
mod readouts;

use contract::{Control, Shown};
use leptos::html::Canvas;
use leptos::prelude::*;

use crate::browser::debounced;
use crate::driver::Driver;
use crate::widgets::measuring::{MeasureEditor, Progress};
use canvas::{shown, Heatmap, MapCanvas};
use compute::Maps;

#[component]
pub fn Attention(driver: Driver, shown: Shown) -> impl IntoView {
    let d = driver;
    let c = d.controls;
    let maps = RwSignal::new(Maps::default());
    let progress = RwSignal::new(Progress::default());
    // After whatever the driver is doing (the page reads the prompt once it loads).
    let run =
        move |steps: usize| d.launch_when_idle(move |d| compute::watch(d, maps, progress, steps));
    run(0);
    let reread = debounced(400, move || run(0));
    Effect::new(move |prev: Option<()>| {
        d.prompt.track();
        if prev.is_some() {
            reread();
        }
    });
    let (layer, head) = (c.number(Control::AttLayer), c.number(Control::AttHead));
    let chosen = Signal::derive(move || {
        let (n_layer, n_head) = maps.with(|m| (m.n_layer, m.n_head));
        let clamp = |v: f64, n: usize| (v as usize).min(n.saturating_sub(1));
        (clamp(layer.get(), n_layer), clamp(head.get(), n_head))
    });
    let limited = move || {
        let (n_layer, n_head) = maps.with(|m| (m.n_layer, m.n_head));
        let (l, h) = chosen.get();
        let layers = format!("this model's layers 0–{}", n_layer.saturating_sub(1));
        let heads = format!("this model's heads 0–{}", n_head.saturating_sub(1));
        if n_layer == 0 {
            return Vec::new(); // nothing read yet
        }
        let notices = [
            Control::AttLayer.spec().limited(layer.get().trunc(), l as f64, &layers),
            Control::AttHead.spec().limited(head.get().trunc(), h as f64, &heads),
        ];
        notices.into_iter().flatten().collect::<Vec<_>>()
    };
    let pick = Callback::new(move |(l, h): (usize, usize)| {
        layer.set(l as f64);
        head.set(h as f64);
    });
    let hide = Signal::derive(move || c.text(Control::FirstToken).get() == "hide");
    let watch = move |_| run(c.number(Control::MaxTokens).get_untracked() as usize);
    let large = NodeRef::<Canvas>::new();
    view! {
        <div class="widget-body attention">
            <MeasureEditor driver=d shown=shown progress=progress testid="att-progress">
                <button data-testid="read-attention" disabled=move || d.generating.get() on:click=move |_| run(0)>"Read again"</button>
                <button data-testid="watch-attention" disabled=move || d.generating.get() on:click=watch>"Generate and watch"</button>
            </MeasureEditor>
            <section class="panel">
                <p class="legend">"Rows: layers; columns: heads. In each map row i is where token i looks (darker: more weight; the square root of the weight, so small weights show). Click a map to open it."</p>
                <Grid maps=maps chosen=chosen hide=hide pick=pick/>
            </section>
            <section class="panel">
                {move || limited().into_iter().map(|m| view! { <p class="notice" role="status" data-testid="limit-notice">{m}</p> }).collect_view()}
                <h3 data-testid="att-title">{move || { let (l, h) = chosen.get(); format!("Layer {l}, head {h}: hover a row to see where that token looked") }}</h3>
                <Heatmap driver=d maps=maps chosen=chosen hide=hide node=large/>
                <readouts::MapTable driver=d maps=maps chosen=chosen hide=hide/>
                <readouts::HeadTable maps=maps pick=pick/>
            </section>
        </div>
    }
}

/// The small maps, one per (layer, head).
#[component]
fn Grid(
    maps: RwSignal<Maps>,
    chosen: Signal<(usize, usize)>,
    hide: Signal<bool>,
    pick: Callback<(usize, usize)>,
) -> impl IntoView {
    let shape = Memo::new(move |_| maps.with(|m| (m.n_layer, m.n_head)));
    move || {
        let (n_layer, n_head) = shape.get();
        let rows = (0..n_layer).map(|l| {
            let cells = (0..n_head).map(|h| {
                let weights = Signal::derive(move || maps.with(|m| match m.n() {
                    0 => (Vec::new(), 0),
                    n => (shown(m, l, h, hide.get()), n),
                }));
                view! {
                    <button class="att-thumb" data-testid="att-thumb" data-layer=l.to_string() data-head=h.to_string()
                        class:selected=move || chosen.get() == (l, h) on:click=move |_| pick.run((l, h))
                        title=format!("layer {l}, head {h}")>
                        <MapCanvas weights=weights class="att-small"/>
                    </button>
                }
            }).collect_view();
            view! { <div class="att-row"><span class="att-layer">{format!("L{l}")}</span>{cells}</div> }
        }).collect_view();
        view! { <div class="att-grid" data-testid="att-grid">{rows}</div> }
    }
}

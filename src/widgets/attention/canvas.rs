//! Attention maps on canvases, one pixel per weight: the small map of every
//! head, and the chosen head's large one, whose hovered row tints the text
//! by where that token looked.

use leptos::html::Canvas;
use leptos::prelude::*;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

use super::compute::Maps;
use crate::distribution::visible;
use crate::driver::Driver;

/// A head's map as shown: with `hide`, each row without the first token,
/// renormalised (the first row, which has only that token, stays).
pub fn shown(maps: &Maps, layer: usize, head: usize, hide: bool) -> Vec<f32> {
    let (n, w) = (maps.n(), maps.head(layer, head));
    match hide {
        false => w.to_vec(),
        true => w
            .chunks(n.max(1))
            .enumerate()
            .flat_map(|(i, row)| engine::lessons::heads::without_first(row, i))
            .collect(),
    }
}

/// Paints `weights` (`rows` × `cols`, each in [0, 1]) into `canvas`, one
/// pixel each: white → dark blue by the square root of the weight (so the
/// many small weights of a long row still show).
fn paint(canvas: &HtmlCanvasElement, weights: &[f32], rows: usize, cols: usize) {
    canvas.set_width(cols.max(1) as u32);
    canvas.set_height(rows.max(1) as u32);
    let Ok(Some(ctx)) = canvas.get_context("2d") else { return };
    let Ok(ctx) = ctx.dyn_into::<CanvasRenderingContext2d>() else { return };
    let mut px = vec![255u8; rows * cols * 4];
    for (p, &w) in px.chunks_exact_mut(4).zip(weights) {
        let v = w.clamp(0.0, 1.0).sqrt();
        p[0] = (255.0 - v * 225.0) as u8;
        p[1] = (255.0 - v * 191.0) as u8;
        p[2] = (255.0 - v * 80.0) as u8;
    }
    if let Ok(img) =
        ImageData::new_with_u8_clamped_array_and_sh(Clamped(&px), cols as u32, rows as u32)
    {
        let _ = ctx.put_image_data(&img, 0.0, 0.0);
    }
}

/// A canvas that paints `weights` whenever they change.
#[component]
pub fn MapCanvas(
    weights: Signal<(Vec<f32>, usize)>,
    #[prop(into)] class: String,
    #[prop(optional)] node: Option<NodeRef<Canvas>>,
) -> impl IntoView {
    let node = node.unwrap_or_default();
    Effect::new(move || {
        let (w, n) = weights.get();
        if let Some(c) = node.get() {
            paint(&c, &w, n, n);
        }
    });
    view! { <canvas node_ref=node class=class></canvas> }
}

/// The chosen head's map, large, and the text tinted by the hovered row.
#[component]
pub fn Heatmap(
    driver: Driver,
    maps: RwSignal<Maps>,
    chosen: Signal<(usize, usize)>,
    hide: Signal<bool>,
    node: NodeRef<Canvas>,
) -> impl IntoView {
    let d = driver;
    let hovered = RwSignal::new(None::<usize>);
    let weights = Signal::derive(move || {
        let (l, h) = chosen.get();
        maps.with(|m| (shown(m, l, h, hide.get()), m.n()))
    });
    let hover = move |ev: web_sys::PointerEvent| {
        let Some(c) = node.get_untracked() else { return };
        let rect = c.get_bounding_client_rect();
        let n = maps.with_untracked(Maps::n);
        if rect.height() > 0.0 && n > 0 {
            let y = (ev.client_y() as f64 - rect.top()) / rect.height();
            hovered.set(Some(((y * n as f64) as usize).min(n - 1)));
        }
    };
    let strip = move || {
        let (w, n) = weights.get();
        let row = hovered.get();
        maps.with(|m| {
            m.tokens
                .iter()
                .enumerate()
                .map(|(j, &t)| {
                    let text = visible(&d.lab.with_value(|l| l.token_text(t)));
                    let weight = row.map(|i| w[i * n + j]);
                    let tint = weight.map_or(String::new(), |w| format!("rgb(30 64 175 / {:.3})", w.sqrt()));
                    view! {
                        <span class="att-token" class:query=row == Some(j) data-testid="att-token"
                            data-weight=weight.map(|w| format!("{w:.6}")) style:background-color=tint>{text}</span>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="att-heatmap">
            <MapCanvas weights=weights class="att-large" node=node/>
            <div class="att-overlay" data-testid="att-heatmap" on:pointermove=hover on:pointerleave=move |_| hovered.set(None)></div>
        </div>
        <p class="att-strip" data-testid="att-strip" data-row=move || hovered.get().map(|r| r.to_string())>{strip}</p>
    }
}

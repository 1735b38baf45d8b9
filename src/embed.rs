//! Embedding: the compact footer (status, "open in Decode Lab"), the height
//! report to the parent page, and "Copy embed code".
//!
//! Height message (documented in EMBEDDING.md), posted to `window.parent`
//! whenever the widget's height changes:
//! `{ type: "decode-lab:height", height: <CSS px, integer>, widget: "<name>" }`.

use js_sys::{Object, Reflect};
use leptos::html::Div;
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::url_state::Share;

/// The message `type` the parent's script listens for.
pub const HEIGHT_MESSAGE: &str = "decode-lab:height";

/// The one-line script that sizes every Decode Lab iframe on a page (safe to
/// paste once per embed: it installs itself once).
pub const SIZER_SCRIPT: &str = r#"<script>if(!window.decodeLabSizer){window.decodeLabSizer=1;addEventListener("message",function(e){var d=e.data;if(d&&d.type==="decode-lab:height")document.querySelectorAll("iframe").forEach(function(f){if(f.contentWindow===e.source)f.style.height=d.height+"px"})})}</script>"#;

/// Posts the height of `root` to the parent page whenever it changes.
pub fn report_height(root: NodeRef<Div>, widget: &'static str) {
    Effect::new(move |_| {
        let Some(el) = root.get() else { return };
        let el: web_sys::Element = el.into();
        let post = {
            let el = el.clone();
            move || {
                let Some(window) = web_sys::window() else { return };
                let Ok(Some(parent)) = window.parent() else { return };
                if Object::is(&parent, &window) {
                    return; // not in a frame
                }
                let height = el.get_bounding_client_rect().height().ceil();
                let msg = Object::new();
                let _ = Reflect::set(&msg, &"type".into(), &HEIGHT_MESSAGE.into());
                let _ = Reflect::set(&msg, &"height".into(), &height.into());
                let _ = Reflect::set(&msg, &"widget".into(), &widget.into());
                let _ = parent.post_message(&msg, "*");
            }
        };
        post();
        let callback = Closure::<dyn Fn()>::new(post);
        if let Ok(observer) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) {
            observer.observe(&el);
            callback.forget(); // lives as long as the page
        }
    });
}

/// The iframe snippet for the current state, at `height` px.
pub fn snippet(share: &Share, title: &str, height: u32) -> String {
    let src = share.url(true).replace('&', "&amp;").replace('"', "&quot;");
    let title = title.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    format!(
        "<iframe src=\"{src}\" title=\"Decode Lab: {title}\" width=\"100%\" height=\"{height}\" style=\"border:0;max-width:100%\" loading=\"lazy\"></iframe>\n{SIZER_SCRIPT}"
    )
}

/// A starting height for the snippet: what the widget measures now, without
/// the page header (the script then keeps it exact).
fn measured_height() -> u32 {
    let body = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(".widget-body, .playground").ok().flatten());
    let h = body.map_or(480.0, |b| b.get_bounding_client_rect().height() + 70.0);
    ((h / 10.0).ceil() * 10.0).clamp(300.0, 2000.0) as u32
}

/// "Copy embed code": copies the snippet and shows it for copying by hand.
#[component]
pub fn EmbedCode(title: &'static str) -> impl IntoView {
    let Some(share) = use_context::<Share>() else { return ().into_any() };
    let open = RwSignal::new(false);
    let copied = RwSignal::new(None::<bool>);
    let height = RwSignal::new(480u32);
    let code = move || snippet(&share, title, height.get());
    let copy = move |_| {
        height.set(measured_height());
        open.set(true);
        let text = code();
        leptos::task::spawn_local(async move { copied.set(Some(copy_to_clipboard(&text).await)) });
    };
    view! {
        <div class="embed-code">
            <button data-testid="copy-embed" on:click=copy>"Copy embed code"</button>
            {move || copied.get().map(|ok| view! {
                <span class="note" role="status">{if ok { " copied: paste it into your page" } else { " select the code below and copy it" }}</span>
            })}
            {move || open.get().then(|| view! {
                <textarea data-testid="embed-code" readonly rows="4" prop:value=code
                    on:focus=select_all></textarea>
            })}
        </div>
    }
    .into_any()
}

/// Puts `text` on the clipboard; false where the browser refuses (no
/// permission, insecure origin): the caller then shows the text to copy by hand.
pub async fn copy_to_clipboard(text: &str) -> bool {
    match web_sys::window().map(|w| w.navigator().clipboard()) {
        Some(c) => wasm_bindgen_futures::JsFuture::from(c.write_text(text)).await.is_ok(),
        None => false,
    }
}

/// Selects the whole snippet when its box gets focus (easy to copy by hand).
pub fn select_all(ev: web_sys::FocusEvent) {
    event_target::<web_sys::HtmlTextAreaElement>(&ev).select()
}

/// The embed's footer: status, backend, a link to the full page, the code.
#[component]
pub fn EmbedFooter(
    state: Signal<&'static str>,
    backend: Signal<Option<String>>,
    title: &'static str,
) -> impl IntoView {
    let share = use_context::<Share>();
    let href = move || share.map(|s| s.url(false)).unwrap_or_default();
    view! {
        <footer class="embed-footer">
            <span class="status" data-testid="status" data-state=state>{state}</span>
            {move || backend.get().map(|b| view! { <span class="badge small">{b}</span> })}
            <a data-testid="open-full" href=href target="_blank" rel="noopener">"open in Decode Lab ↗"</a>
            <EmbedCode title=title/>
        </footer>
    }
}

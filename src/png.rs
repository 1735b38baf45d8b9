//! Copy as PNG: a chart (its SVG or canvas) or a table drawn into a PNG at
//! twice its size on screen, with the widget's link written in the bottom
//! corner and kept in the file as a `tEXt` chunk (keyword `Source`), so a
//! figure pasted into a slide leads back to its live view. Copied to the
//! clipboard where the browser allows it, else saved as a file.

use wasm_bindgen::{JsCast, JsValue};

use crate::browser::js_error;
use wasm_bindgen_futures::JsFuture;
use web_sys::{CanvasRenderingContext2d, Element, HtmlCanvasElement, HtmlImageElement};

/// Pixels per CSS pixel in the PNG (sharp on a projector).
const SCALE: f64 = 2.0;
/// The link's font and line height under the figure (CSS pixels).
const STAMP_FONT: &str = "10px sans-serif";
const STAMP_LINE: f64 = 12.0;
/// The narrowest PNG (a small chart still has room for its link).
const MIN_WIDTH: f64 = 320.0;
/// The SVG properties a chart's stylesheet sets (each also a presentation
/// attribute): written onto each element of the copy, since an SVG drawn as
/// an image sees no stylesheet.
const SVG_STYLE: [&str; 13] = [
    "fill",
    "fill-opacity",
    "stroke",
    "stroke-width",
    "stroke-dasharray",
    "stroke-opacity",
    "opacity",
    "font-size",
    "font-family",
    "font-weight",
    "text-anchor",
    "dominant-baseline",
    "visibility",
];

type Res<T> = Result<T, String>;

/// `figure` (an `svg`, a `canvas` or a `table`) as PNG bytes, `url` stamped.
pub async fn figure_png(figure: &Element, url: &str) -> Res<Vec<u8>> {
    let rect = figure.get_bounding_client_rect();
    let doc = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    let canvas: HtmlCanvasElement = doc
        .create_element("canvas")
        .map_err(|e| js_error(&e))?
        .dyn_into()
        .map_err(|_| "no canvas")?;
    let (w, h) = match figure.tag_name().to_lowercase().as_str() {
        "table" => table_size(figure),
        _ => (rect.width().max(1.0), rect.height().max(1.0)),
    };
    let ctx: CanvasRenderingContext2d = canvas
        .get_context("2d")
        .map_err(|e| js_error(&e))?
        .ok_or("no 2d context")?
        .dyn_into()
        .map_err(|_| "no 2d context")?;
    let width = w.max(MIN_WIDTH);
    ctx.set_font(STAMP_FONT);
    let lines = wrap(&ctx, url, width - 8.0);
    let stamp = STAMP_LINE * lines.len() as f64 + 6.0;
    // Sizing the canvas resets its context: the font is set again below.
    canvas.set_width((width * SCALE).ceil() as u32);
    canvas.set_height(((h + stamp) * SCALE).ceil() as u32);
    ctx.scale(SCALE, SCALE).map_err(|e| js_error(&e))?;
    ctx.set_fill_style_str("#fff");
    ctx.fill_rect(0.0, 0.0, width, h + stamp);
    match figure.tag_name().to_lowercase().as_str() {
        "canvas" => {
            let source: &HtmlCanvasElement = figure.dyn_ref().ok_or("not a canvas")?;
            ctx.draw_image_with_html_canvas_element_and_dw_and_dh(source, 0.0, 0.0, w, h)
                .map_err(|e| js_error(&e))?;
        }
        "table" => draw_table(&ctx, figure),
        _ => {
            let image = svg_image(figure, w, h).await?;
            ctx.draw_image_with_html_image_element_and_dw_and_dh(&image, 0.0, 0.0, w, h)
                .map_err(|e| js_error(&e))?;
        }
    }
    ctx.set_font(STAMP_FONT);
    ctx.set_fill_style_str("#5b6475");
    ctx.set_text_align("right");
    for (i, line) in lines.iter().enumerate() {
        ctx.fill_text(line, width - 4.0, h + STAMP_LINE * (i + 1) as f64 + 1.0)
            .map_err(|e| js_error(&e))?;
    }
    let data = canvas.to_data_url_with_type("image/png").map_err(|e| js_error(&e))?;
    let b64 = data.split_once(',').map(|(_, b)| b).ok_or("no PNG data")?;
    let bytes = base64(b64).ok_or("the PNG's base64 could not be read")?;
    Ok(with_source(&bytes, url))
}

/// `text` cut into lines no wider than `max` (a long link wraps anywhere:
/// it has no spaces).
fn wrap(ctx: &CanvasRenderingContext2d, text: &str, max: f64) -> Vec<String> {
    let fits = |s: &str| ctx.measure_text(s).map(|m| m.width() <= max).unwrap_or(true);
    let mut lines = vec![String::new()];
    for c in text.chars() {
        let line = lines.last_mut().expect("one line at least");
        line.push(c);
        if !fits(line) && line.chars().count() > 1 {
            line.pop();
            lines.push(c.to_string());
        }
    }
    lines
}

/// A copy of `svg` with its computed style written on every element, as an image.
async fn svg_image(svg: &Element, w: f64, h: f64) -> Res<HtmlImageElement> {
    let window = web_sys::window().ok_or("no window")?;
    let copy: Element =
        svg.clone_node_with_deep(true).map_err(|e| js_error(&e))?.dyn_into().map_err(|_| "svg")?;
    let originals = svg.query_selector_all("*").map_err(|e| js_error(&e))?;
    let copies = copy.query_selector_all("*").map_err(|e| js_error(&e))?;
    for i in 0..originals.length().min(copies.length()) {
        let (Some(o), Some(c)) = (originals.item(i), copies.item(i)) else { continue };
        let (Ok(o), Ok(c)) = (o.dyn_into::<Element>(), c.dyn_into::<Element>()) else { continue };
        let Ok(Some(style)) = window.get_computed_style(&o) else { continue };
        // As presentation attributes, not a `style` attribute: the page's CSP
        // (style-src 'self') refuses inline styles, even on a detached copy.
        for p in SVG_STYLE {
            if let Ok(v) = style.get_property_value(p) {
                let _ = c.set_attribute(p, &v);
            }
        }
    }
    let _ = copy.set_attribute("xmlns", "http://www.w3.org/2000/svg");
    let _ = copy.set_attribute("width", &w.to_string());
    let _ = copy.set_attribute("height", &h.to_string());
    let text = web_sys::XmlSerializer::new()
        .map_err(|e| js_error(&e))?
        .serialize_to_string(&copy)
        .map_err(|e| js_error(&e))?;
    let image = HtmlImageElement::new().map_err(|e| js_error(&e))?;
    let loaded = js_sys::Promise::new(&mut |ok, fail| {
        image.set_onload(Some(&ok));
        image.set_onerror(Some(&fail));
    });
    // A data: URL: the page's CSP allows images from there (not blob:).
    let src = format!("data:image/svg+xml;charset=utf-8,{}", js_sys::encode_uri_component(&text));
    image.set_src(&src);
    JsFuture::from(loaded).await.map_err(|_| "the chart could not be drawn as an image")?;
    Ok(image)
}

/// Row height and cell padding of a drawn table (CSS pixels).
const ROW: f64 = 18.0;
const PAD: f64 = 6.0;

fn cells(table: &Element) -> Vec<Vec<String>> {
    let Ok(rows) = table.query_selector_all("tr") else { return Vec::new() };
    (0..rows.length())
        .filter_map(|i| rows.item(i)?.dyn_into::<Element>().ok())
        .map(|r| {
            let c = r.children();
            (0..c.length())
                .filter_map(|j| c.item(j)?.text_content())
                .map(|t| t.trim().to_string())
                .collect()
        })
        .collect()
}

/// Column widths at 7 px a character (drawn in 12 px sans-serif).
fn widths(rows: &[Vec<String>]) -> Vec<f64> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|j| {
            let chars = rows.iter().filter_map(|r| r.get(j)).map(|c| c.chars().count()).max();
            chars.unwrap_or(0) as f64 * 7.0 + 2.0 * PAD
        })
        .collect()
}

fn table_size(table: &Element) -> (f64, f64) {
    let rows = cells(table);
    (widths(&rows).iter().sum::<f64>().max(40.0), rows.len() as f64 * ROW + 4.0)
}

fn draw_table(ctx: &CanvasRenderingContext2d, table: &Element) {
    let rows = cells(table);
    let widths = widths(&rows);
    ctx.set_text_align("left");
    for (i, row) in rows.iter().enumerate() {
        let y = i as f64 * ROW + 2.0;
        ctx.set_font(if i == 0 { "bold 12px sans-serif" } else { "12px sans-serif" });
        ctx.set_fill_style_str(if i % 2 == 1 { "#f3f5f9" } else { "#fff" });
        ctx.fill_rect(0.0, y, widths.iter().sum(), ROW);
        ctx.set_fill_style_str("#1d2430");
        let mut x = 0.0;
        for (cell, w) in row.iter().zip(&widths) {
            let _ = ctx.fill_text(cell, x + PAD, y + ROW - 5.0);
            x += w;
        }
    }
}

/// `png` with a `tEXt` chunk `Source` = `url` before its `IEND` (PNG 1.2,
/// §11.3.4.3: Latin-1 text; a URL as the page writes it is ASCII).
pub fn with_source(png: &[u8], url: &str) -> Vec<u8> {
    const IEND: usize = 12; // length, type, CRC
    if png.len() < 8 + IEND {
        return png.to_vec();
    }
    let mut data = b"Source\0".to_vec();
    data.extend(url.bytes().filter(u8::is_ascii));
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    let mut typed = b"tEXt".to_vec();
    typed.extend(&data);
    chunk.extend(&typed);
    chunk.extend(crc32(&typed).to_be_bytes());
    let cut = png.len() - IEND;
    [&png[..cut], &chunk[..], &png[cut..]].concat()
}

/// CRC-32 as PNG computes it (ISO 3309, reflected, 0xEDB88320).
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

fn base64(text: &str) -> Option<Vec<u8>> {
    let decoded = web_sys::window()?.atob(text).ok()?;
    decoded.chars().map(|c| u8::try_from(c as u32).ok()).collect()
}

/// Puts `png` on the clipboard; where the browser refuses, saves it as
/// `name`. Says which happened.
pub async fn copy_or_save(png: &[u8], name: &str) -> &'static str {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(png));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/png");
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options) else {
        return "failed";
    };
    if copy(&blob).await.is_ok() {
        return "copied";
    }
    save(png, name);
    "saved as a file (this browser keeps images off the clipboard here)"
}

async fn copy(blob: &web_sys::Blob) -> Result<(), JsValue> {
    let clipboard = web_sys::window().ok_or(JsValue::NULL)?.navigator().clipboard();
    let record = js_sys::Object::new();
    js_sys::Reflect::set(&record, &"image/png".into(), blob)?;
    let item = web_sys::ClipboardItem::new_with_record_from_str_to_blob_promise(&record)?;
    JsFuture::from(clipboard.write(&js_sys::Array::of1(&item))).await.map(|_| ())
}

fn save(png: &[u8], name: &str) {
    // btoa reads a string of bytes (each char ≤ U+00FF).
    let b64: String = png.iter().map(|&b| b as char).collect();
    let Some(window) = web_sys::window() else { return };
    let Ok(encoded) = window.btoa(&b64) else { return };
    let Some(doc) = window.document() else { return };
    let Ok(link) = doc.create_element("a") else { return };
    let _ = link.set_attribute("href", &format!("data:image/png;base64,{encoded}"));
    let _ = link.set_attribute("download", name);
    if let Some(link) = link.dyn_ref::<web_sys::HtmlElement>() {
        link.click();
    }
}

/// The **Copy as PNG** button of a figure: `find` gives the element to draw
/// when it is pressed (`None`: nothing drawn yet); `label` names the figure
/// (for a screen reader, and the file's name when saved).
#[leptos::component]
pub fn CopyPng(
    find: leptos::prelude::Callback<(), Option<Element>>,
    label: String,
) -> impl leptos::IntoView {
    use leptos::prelude::*;
    let name = format!("decode-lab-{}.png", crate::csv::slug(&label));
    let said = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let press = move |_| {
        let Some(figure) = find.run(()) else {
            return said.set("nothing drawn yet".into());
        };
        let url = use_context::<crate::url_state::Share>()
            .map(|s| s.url(false))
            .or_else(|| web_sys::window()?.location().href().ok())
            .unwrap_or_default();
        let name = name.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            let outcome = match figure_png(&figure, &url).await {
                Ok(png) => copy_or_save(&png, &name).await.to_string(),
                Err(e) => format!("could not be drawn: {e}"),
            };
            said.set(outcome);
            busy.set(false);
        });
    };
    view! {
        <button type="button" class="export" data-testid="copy-png" aria-label=format!("Copy as PNG: {label}") disabled=move || busy.get() on:click=press>"Copy as PNG"</button>
        <span class="export-said" role="status" data-testid="copy-png-said">{move || said.get()}</span>
    }
}

//! Small helpers over the browser that any part of the page uses: a thrown
//! value's text, a turn for the browser between long computations, and a
//! call put off until input settles.

use js_sys::Reflect;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Text of a thrown value: an `Error`'s or `DOMException`'s message, a
/// thrown string, else how the value prints.
pub fn js_error(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Resolves after the browser has had a turn (pending input, paint).
pub async fn yield_to_browser() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback(&resolve);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// Runs `f` once `ms` milliseconds pass with no further call of the returned
/// function (a slider being dragged, a prompt being typed, calls only once).
pub fn debounced(ms: i32, f: impl Fn() + Clone + 'static) -> impl Fn() + Copy {
    let timer = leptos::prelude::StoredValue::new(None::<i32>);
    let f = leptos::prelude::StoredValue::new_local(f);
    move || {
        use leptos::prelude::{GetValue, SetValue};
        let Some(window) = web_sys::window() else { return };
        if let Some(t) = timer.get_value() {
            window.clear_timeout_with_handle(t);
        }
        let run = f.get_value();
        let later = Closure::once_into_js(run);
        let handle = window
            .set_timeout_with_callback_and_timeout_and_arguments_0(later.unchecked_ref(), ms)
            .ok();
        timer.set_value(handle);
    }
}

//! Offline after one visit: the page registers its service worker
//! (`www/sw.js`, whose file list `tools/post_build.mjs` writes) and the
//! header says "available offline" once the worker reports every file of
//! this version stored, checked against the build's sizes and checksums.

use js_sys::{Promise, Reflect};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Where the page stands offline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Offline {
    /// The worker is storing this version's files.
    Storing,
    /// Every file is stored: the page loads with the network off.
    Ready,
    /// No service worker here (a plain-http host, a browser without them, a failed install).
    Unavailable,
}

/// Registers the service worker once `ready` (the model loaded: its files
/// are in the page's cache, where the worker takes them from instead of
/// downloading them a second time), and reports what it has stored.
pub fn start(ready: Signal<bool>) -> RwSignal<Offline> {
    let state = RwSignal::new(Offline::Unavailable);
    let started = StoredValue::new(false);
    Effect::new(move |_| {
        if !ready.get() || started.get_value() {
            return;
        }
        started.set_value(true);
        state.set(Offline::Storing);
        leptos::task::spawn_local(async move {
            state.set(match ask().await {
                Ok(true) => Offline::Ready,
                Ok(false) => Offline::Storing,
                Err(_) => Offline::Unavailable,
            });
        });
    });
    state
}

/// Calls the method `name` of a JS object.
fn call(obj: &JsValue, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = Reflect::get(obj, &name.into())?.dyn_into()?;
    f.apply(obj, &args.iter().collect())
}

/// Registers `sw.js` (beside the page: any sub-path), waits for an active
/// worker and asks it whether this version's files are all stored.
async fn ask() -> Result<bool, JsValue> {
    let navigator = web_sys::window().ok_or(JsValue::NULL)?.navigator();
    let container = Reflect::get(&navigator, &"serviceWorker".into())?;
    if container.is_undefined() {
        return Err(JsValue::NULL);
    }
    let registration =
        JsFuture::from(Promise::from(call(&container, "register", &["./sw.js".into()])?)).await?;
    watch_updates(&registration)?;
    let registration =
        JsFuture::from(Promise::from(Reflect::get(&container, &"ready".into())?)).await?;
    let active = Reflect::get(&registration, &"active".into())?;
    // The answer comes as a message to the page.
    let mut answer = None;
    let replied = Promise::new(&mut |resolve, _| answer = Some(resolve));
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
        let data = Reflect::get(&event, &"data".into()).unwrap_or(JsValue::NULL);
        let kind = Reflect::get(&data, &"type".into()).ok().and_then(|t| t.as_string());
        if kind.as_deref() == Some("decode-lab:offline") {
            if let Some(resolve) = &answer {
                let _ = resolve.call1(&JsValue::NULL, &data);
            }
        }
    });
    call(&container, "addEventListener", &["message".into(), listener.as_ref().clone()])?;
    call(&active, "postMessage", &["decode-lab:offline?".into()])?;
    let data = JsFuture::from(replied).await?;
    call(&container, "removeEventListener", &["message".into(), listener.as_ref().clone()])?;
    Ok(Reflect::get(&data, &"ready".into())?.as_bool().unwrap_or(false))
}

thread_local! {
    /// Set when a newer version's files are all stored while this page runs
    /// an older one: the page says a reload brings it (never a mix of the two).
    /// Reference-counted: an arena signal would die with the view that first read it.
    static UPDATE: ArcRwSignal<bool> = ArcRwSignal::new(false);
}

/// Watches for a newer build: once its worker has stored every file (and
/// this page is controlled by the older one), the header offers a reload.
fn watch_updates(registration: &JsValue) -> Result<(), JsValue> {
    let reg = registration.clone();
    let on_found = Closure::<dyn FnMut()>::new(move || {
        let Ok(installing) = Reflect::get(&reg, &"installing".into()) else { return };
        let worker = installing.clone();
        let on_state = Closure::<dyn FnMut()>::new(move || {
            let state = Reflect::get(&worker, &"state".into()).ok().and_then(|s| s.as_string());
            let controlled = web_sys::window()
                .and_then(|w| Reflect::get(&w.navigator(), &"serviceWorker".into()).ok())
                .and_then(|c| Reflect::get(&c, &"controller".into()).ok())
                .is_some_and(|c| !c.is_null() && !c.is_undefined());
            if state.as_deref() == Some("installed") && controlled {
                UPDATE.with(|u| u.set(true));
            }
        });
        let _ = Reflect::set(&installing, &"onstatechange".into(), on_state.as_ref());
        on_state.forget(); // lives as long as that worker
    });
    call(registration, "addEventListener", &["updatefound".into(), on_found.as_ref().clone()])?;
    on_found.forget(); // lives as long as the page
    Ok(())
}

/// Lets the waiting (newer) worker take over, then reloads once it controls
/// the page: its activation deletes the old version's files first, so the
/// reloaded page is the new version whole. A plain reload would keep the old
/// worker, which serves until every tab it controls is closed.
async fn apply_update() -> Result<(), JsValue> {
    let window = web_sys::window().ok_or(JsValue::NULL)?;
    let container = Reflect::get(&window.navigator(), &"serviceWorker".into())?;
    let registration =
        JsFuture::from(Promise::from(call(&container, "getRegistration", &[])?)).await?;
    let waiting = Reflect::get(&registration, &"waiting".into())?;
    if waiting.is_null() || waiting.is_undefined() {
        return window.location().reload(); // already active: its files serve this load
    }
    let reload = Closure::<dyn FnMut()>::new(move || {
        let _ = web_sys::window().map(|w| w.location().reload());
    });
    call(&container, "addEventListener", &["controllerchange".into(), reload.as_ref().clone()])?;
    reload.forget(); // lives until the reload
    call(&waiting, "postMessage", &["decode-lab:update".into()])?;
    Ok(())
}

/// The header's badge.
#[component]
pub fn OfflineBadge(state: RwSignal<Offline>) -> impl IntoView {
    move || {
        let (text, title, testid_state) = match state.get() {
            Offline::Ready => ("available offline", "this page, its CPU worker and the bundled model are stored: they load with the network off", "ready"),
            Offline::Storing => ("storing for offline…", "the service worker is storing this version's files", "storing"),
            Offline::Unavailable => return None,
        };
        let update = UPDATE.with(|u| u.get()).then(|| view! {
            " "
            <button class="badge offline" data-testid="offline-update" title="a newer version of Decode Lab is stored: reload to use it"
                on:click=move |_| leptos::task::spawn_local(async { let _ = apply_update().await; })>"update ready: reload"</button>
        });
        Some(
            view! { <span class="badge offline" data-testid="offline" data-state=testid_state title=title>{text}</span>{update} },
        )
    }
}

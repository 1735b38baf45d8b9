//! The model picker in the header: the bundled model, a Hugging Face repo id
//! or folder address, or files from a folder on this computer (picked or
//! dropped). Every choice becomes `model=` and the page reloads, so the
//! address names the model: picked files are first stored in the browser's
//! Cache Storage under `local-models/NAME/`, where the loader finds them
//! like any cached download (no copy through the page's memory, and a
//! reload or a second tab opens them again).

use contract::{Control, Drives, Input};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::browser::js_error;
use crate::load::cache::{forget_model, model_cache, stored_models, Stored};
use crate::load::download::size;
use crate::load::model_files::{ALL_FILES, HELDOUT_FILE, NEEDED};
use crate::load::source::LOCAL_PREFIX;

/// Files a model folder may hold (what the file picker offers).
const ACCEPT: &str = ".json,.txt,.safetensors,.bin";

#[component]
pub fn ModelPicker(
    /// The model in use, in words.
    current: String,
) -> impl IntoView {
    let typed = RwSignal::new(crate::query::query("model").unwrap_or_default());
    // Bumped when the menu opens or a model is forgotten: the stored list is read again.
    let refresh = RwSignal::new(0u32);
    let problem = RwSignal::new(None::<String>);
    let open = move || match contract::model_base(&typed.get_untracked()) {
        Ok(_) => navigate_with_model(Some(typed.get_untracked().trim())),
        Err(e) => problem.set(Some(e)),
    };
    let pick = move |files: Option<web_sys::FileList>| {
        let files: Vec<web_sys::File> = files
            .map(|list| (0..list.length()).filter_map(|i| list.get(i)).collect())
            .unwrap_or_default();
        if files.is_empty() {
            return;
        }
        problem.set(None);
        leptos::task::spawn_local(async move {
            match store(&files).await {
                Ok(base) => navigate_with_model(Some(&base)),
                Err(e) => problem.set(Some(e)),
            }
        });
    };
    let on_change = move |ev: web_sys::Event| {
        let input = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok());
        pick(input.and_then(|i| i.files()));
    };
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        pick(ev.data_transfer().and_then(|d| d.files()));
    };
    // `webkitdirectory` (a folder picker; every browser has it under that
    // name) is not among leptos' typed attributes: set once it is mounted.
    let folder = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = folder.get() {
            let _ = input.set_attribute("webkitdirectory", "");
        }
    });
    view! {
        <details class="model-picker" data-testid="model-picker"
            on:toggle=move |_| refresh.update(|n| *n += 1)>
            <summary>"Model: " <span data-testid="model-name">{current}</span></summary>
            <div class="picker-body"
                on:dragover=|ev: web_sys::DragEvent| ev.prevent_default()
                on:drop=on_drop>
                <label>"Hugging Face repo or folder address "
                    <input type="text" data-testid="model-id" placeholder="openai-community/gpt2"
                        prop:value=move || typed.get()
                        on:input=move |ev| typed.set(event_target_value(&ev))
                        on:keydown=move |ev: web_sys::KeyboardEvent| if ev.key() == "Enter" { open() }/>
                </label>
                <button data-testid="model-open" on:click=move |_| open()>"Open"</button>
                <button data-testid="model-bundled" on:click=move |_| navigate_with_model(None)>"Bundled model"</button>
                <p class="hint">"A repo needs model.safetensors (f32, f16 or bf16), config.json and tokenizer.json or vocab.json + merges.txt; another site must allow this page with CORS (the Hub does)."</p>
                <div class="files">"Or from this computer (drop files here): "
                    <label>"a folder " <input type="file" node_ref=folder data-testid="model-folder" on:change=on_change/></label>
                    <label>" or its files " <input type="file" multiple accept=ACCEPT data-testid="model-files" on:change=on_change/></label>
                </div>
                {move || problem.get().map(|p| view! { <p class="error" data-testid="model-problem">{p}</p> })}
                <EngineControls/>
                <StoredModels refresh=refresh/>
            </div>
        </details>
    }
}

/// "Stored in this browser": every model folder in Cache Storage with its
/// size and a Forget button (downloads and picked folders alike).
#[component]
fn StoredModels(refresh: RwSignal<u32>) -> impl IntoView {
    let stored = RwSignal::new(Vec::<Stored>::new());
    Effect::new(move |_| {
        refresh.track();
        leptos::task::spawn_local(async move { stored.set(stored_models().await) });
    });
    let page_dir = web_sys::window()
        .and_then(|w| w.location().href().ok())
        .and_then(|h| {
            h.split('?').next().map(|p| p[..p.rfind('/').map_or(0, |i| i + 1)].to_string())
        })
        .unwrap_or_default();
    let page_dir = StoredValue::new(page_dir);
    view! {
        <div class="stored" data-testid="stored-models">
            <strong>"Stored in this browser"</strong>
            {move || stored.get().is_empty().then(|| view! { <p class="hint">"nothing yet"</p> })}
            <ul>
                {move || stored.get().into_iter().map(|s| {
                    let base = s.base.clone();
                    let dir = page_dir.get_value();
                    let shown = base.strip_prefix(dir.as_str()).unwrap_or(&base).to_string();
                    let forget = move |_| {
                        let base = base.clone();
                        leptos::task::spawn_local(async move {
                            forget_model(&base).await;
                            refresh.update(|n| *n += 1);
                        });
                    };
                    view! {
                        <li data-testid="stored-model" data-base=shown.clone()>
                            <code>{shown.clone()}</code>" " {size(s.bytes)}" "
                            <button data-testid="forget" on:click=forget>"Forget"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </div>
    }
}

/// The controls that say how the engine opens (the table's
/// `Drives::Engine` rows: the GPU kernels): each a drop-down whose change
/// reloads the page with its new value, since the model opens again.
#[component]
fn EngineControls() -> impl IntoView {
    let rows = Control::all().filter(|c| matches!(c.spec().drives, Drives::Engine));
    rows.map(|control| {
        let spec = control.spec();
        let Input::Choice { options, default } = spec.input else { return ().into_any() };
        let now = crate::query::query(spec.name).unwrap_or_else(|| default.to_string());
        let options = options
            .iter()
            .map(|&o| view! { <option value=o selected=now == o>{o}</option> })
            .collect_view();
        let change = move |ev: web_sys::Event| {
            let value = event_target_value(&ev);
            navigate_with(&[(spec.name, (value != default).then_some(value.as_str()))]);
        };
        view! {
            <label class="engine-control" title=spec.help>{spec.label}" "
                <select data-testid=spec.testid() on:change=change>{options}</select>
            </label>
        }
        .into_any()
    })
    .collect_view()
}

/// Reloads the page with `model=` set to `model` (or removed), every other
/// parameter kept: the address names the model, so a link reproduces it.
fn navigate_with_model(model: Option<&str>) {
    navigate_with(&[("model", model)]);
}

/// Reloads the page with each named parameter set to its value (or removed),
/// every other parameter kept.
pub fn navigate_with(changes: &[(&str, Option<&str>)]) {
    let Some(location) = web_sys::window().map(|w| w.location()) else { return };
    let search = location.search().unwrap_or_default();
    let Ok(params) = web_sys::UrlSearchParams::new_with_str(&search) else { return };
    for &(name, value) in changes {
        match value {
            Some(v) => params.set(name, v),
            None => params.delete(name),
        }
    }
    let _ = location.set_search(&String::from(params.to_string()));
}

/// A picked file's path inside the picked folder ("folder/file"; empty, so
/// `None`, for loose files). `webkitRelativePath` is not in web-sys's `File`.
fn relative_path(f: &web_sys::File) -> Option<String> {
    let path = js_sys::Reflect::get(f, &"webkitRelativePath".into()).ok()?.as_string()?;
    (!path.is_empty()).then_some(path)
}

/// The picked files a model folder is read from: the known names at the
/// folder's top level (a cloned Hub repo also holds other formats and
/// subfolders, which are left alone). Refuses a pick without
/// `model.safetensors` at once, with the reason when it has `pytorch_model.bin`.
fn kept(files: &[web_sys::File]) -> Result<Vec<&web_sys::File>, String> {
    let top_level =
        |f: &web_sys::File| relative_path(f).is_none_or(|p| p.matches('/').count() <= 1);
    let wanted = |f: &&web_sys::File| {
        let name = f.name();
        top_level(f) && (ALL_FILES.contains(&name.as_str()) || name == HELDOUT_FILE)
    };
    let kept: Vec<&web_sys::File> = files.iter().filter(wanted).collect();
    let has = |name: &str| files.iter().any(|f| f.name() == name && top_level(f));
    if !has("model.safetensors") {
        if has(engine::model::SHARD_INDEX) {
            let location = "the picked folder".to_string();
            return Err(engine::EngineError::Sharded { location }.to_string());
        }
        if has("pytorch_model.bin") {
            let location = "the picked folder".to_string();
            return Err(engine::EngineError::PytorchOnly { location }.to_string());
        }
        let names: Vec<String> = files.iter().take(8).map(|f| f.name()).collect();
        return Err(format!(
            "no model.safetensors among the picked files ({}): {NEEDED}",
            names.join(", ")
        ));
    }
    Ok(kept)
}

/// Puts `files` into Cache Storage under `local-models/NAME/FILE` (the
/// file itself as the response body: the browser copies it, not the page)
/// and returns that folder's address.
async fn store(files: &[web_sys::File]) -> Result<String, String> {
    let folder = files
        .iter()
        .find_map(|f| {
            let path = relative_path(f)?;
            let dir = path.split('/').next().filter(|d| !d.is_empty() && path.contains('/'))?;
            Some(dir.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)).collect())
        })
        .filter(|d: &String| !d.is_empty() && !d.starts_with('.'))
        .unwrap_or_else(|| "picked".to_string());
    let base = format!("{LOCAL_PREFIX}{folder}/");
    let cache = model_cache().await.ok_or(
        "this browser offers no Cache Storage here (it needs https or localhost), so picked files cannot be kept",
    )?;
    for file in kept(files)? {
        let response = web_sys::Response::new_with_opt_blob(Some(file))
            .map_err(|e| format!("{}: {}", file.name(), js_error(&e)))?;
        let url = format!("{base}{}", file.name());
        JsFuture::from(cache.put_with_str(&url, &response))
            .await
            .map_err(|e| format!("could not store {}: {}", file.name(), js_error(&e)))?;
        // Recorded like a download, so the loader trusts it (src/load/stored.rs).
        let buffer = JsFuture::from(file.array_buffer())
            .await
            .map_err(|e| format!("could not read {}: {}", file.name(), js_error(&e)))?;
        // Checked where it is: a picked checkpoint never enters the page's memory whole.
        let bytes = js_sys::Uint8Array::new(&buffer);
        crate::load::stored::record_checksum(&cache, &url, &bytes)
            .await
            .map_err(|e| format!("could not store {}: {}", file.name(), js_error(&e)))?;
    }
    Ok(base)
}

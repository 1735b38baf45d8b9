//! What the model cache records about each file it stores, and the check
//! before a stored file is used: its size and SHA-256 recorded at download
//! (beside it, under `?decode-lab=checksum`), a mark while a download runs
//! (so a tab closed midway is known next time), and the notices the page
//! shows when a stored copy is dropped or cannot be stored.

use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, Response};

use crate::browser::js_error;

/// The record of a download begun and not finished.
pub const PENDING: &str = "pending";

/// The record of a file the server said is not there (HTTP 404): a folder
/// opened once opens again offline without asking for it (a Hub repo with
/// vocab.json and merges.txt but no tokenizer.json, say).
pub const ABSENT: &str = "absent";

pub fn text_response(text: &str) -> Result<Response, JsValue> {
    Response::new_with_opt_str(Some(text))
}

/// The recorded size and checksum of `url` ("BYTES SHA256"), [`PENDING`] or [`ABSENT`].
pub async fn record_of(cache: &Cache, url: &str) -> Option<String> {
    let r: Response =
        JsFuture::from(cache.match_with_str(&checksum_key(url))).await.ok()?.dyn_into().ok()?;
    JsFuture::from(r.text().ok()?).await.ok()?.as_string()
}

/// Where a file's recorded size and checksum are kept: beside it.
pub fn checksum_key(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}decode-lab=checksum")
}

pub fn file_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// The words for a store that failed: a full quota said as such.
pub fn store_failed(url: &str, e: &JsValue) -> String {
    let quota = Reflect::get(e, &"name".into()).ok().and_then(|n| n.as_string())
        == Some("QuotaExceededError".into());
    match quota {
        true => format!("The browser's storage is full: {} was not stored for offline use (this page runs from the network; free space in the Model menu's stored models).", file_name(url)),
        false => format!("{} could not be stored for offline use ({}): this page runs from the network.", file_name(url), js_error(e)),
    }
}

/// SHA-256 of `bytes` in hex, by the browser's own digest.
async fn sha256(bytes: &Uint8Array) -> Result<String, JsValue> {
    let subtle = web_sys::window().ok_or(JsValue::NULL)?.crypto()?.subtle();
    let digest = JsFuture::from(subtle.digest_with_str_and_js_u8_array("SHA-256", bytes)?).await?;
    Ok(Uint8Array::new(&digest).to_vec().iter().map(|b| format!("{b:02x}")).collect())
}

pub async fn record_checksum(cache: &Cache, url: &str, bytes: &Uint8Array) -> Result<(), JsValue> {
    let record = format!("{} {}", bytes.length(), sha256(bytes).await?);
    let response = text_response(&record)?;
    JsFuture::from(cache.put_with_str(&checksum_key(url), &response)).await.map(|_| ())
}

/// Whether `bytes`, read from the cache for `url`, are what was stored:
/// `Err` says how they differ (cut short, changed, or stored without a record).
pub async fn check_stored(cache: &Cache, url: &str, bytes: &Uint8Array) -> Result<(), String> {
    let record = record_of(cache, url).await.filter(|r| r != PENDING && r != ABSENT);
    let Some(record) = record else {
        return Err("was stored without its checksum (an unfinished download)".into());
    };
    let (size, sum) = record.split_once(' ').unwrap_or(("", ""));
    if size != bytes.length().to_string() {
        return Err(format!("holds {} bytes, not the {size} that were downloaded", bytes.length()));
    }
    match sha256(bytes).await {
        Ok(s) if s == sum => Ok(()),
        Ok(_) => Err("is damaged (its checksum differs from the one recorded at download)".into()),
        Err(e) => Err(format!("could not be checked ({})", js_error(&e))),
    }
}

thread_local! {
    /// What happened to stored files, for the page to say (read by [`notices`]).
    /// Reference-counted, not owned by whichever view first read it: an
    /// arena signal would be disposed when that view re-renders (a panic on
    /// the next read; the fresh-clone CI's e2e caught it).
    static NOTICES: leptos::prelude::ArcRwSignal<Vec<String>> = leptos::prelude::ArcRwSignal::new(Vec::new());
}

pub fn notice(text: String) {
    use leptos::prelude::Update;
    NOTICES.with(|n| n.update(|v| v.push(text)));
}

/// The notices about stored files: a damaged copy fetched again, a full quota.
pub fn notices() -> leptos::prelude::ArcRwSignal<Vec<String>> {
    NOTICES.with(|n| n.clone())
}

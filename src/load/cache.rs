//! Fetching the model files with progress, through the browser's Cache Storage
//! so a second visit (or a second embed on the same page) does not download
//! again. Every failure becomes a message; nothing here panics.

use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, Response};

use super::download::{size, FILE_LIMIT};
use super::stored::{
    check_stored, checksum_key, file_name, notice, record_checksum, record_of, store_failed,
    text_response, ABSENT, PENDING,
};
use crate::browser::js_error;

/// One Cache Storage bucket per app version: a new build never serves files
/// cached by an older one.
const CACHE: &str = concat!("decode-lab-models-", env!("CARGO_PKG_VERSION"));

/// The Cache Storage bucket model files are kept in (`None` where the
/// browser offers none).
pub async fn model_cache() -> Option<Cache> {
    // Cache Storage is missing on plain-http origins other than localhost.
    let caches = web_sys::window()?.caches().ok()?;
    JsFuture::from(caches.open(CACHE)).await.ok()?.dyn_into().ok()
}

/// Forgets `url` in the cache (after its bytes turned out to be unusable),
/// with its recorded checksum.
pub async fn evict(url: &str) {
    if let Some(cache) = model_cache().await {
        let _ = JsFuture::from(cache.delete_with_str(url)).await;
        let _ = JsFuture::from(cache.delete_with_str(&checksum_key(url))).await;
    }
}

/// GETs `url` (from the cache when present), calling `progress(loaded, total)`
/// as bytes arrive; `total` is `None` when the server does not say. Embeds on
/// one page take turns per file (a Web Lock), so only the first downloads it
/// and the others read it from the cache.
/// `None` when the server says the file is not there (HTTP 404).
pub async fn fetch_optional(
    url: &str,
    progress: impl Fn(u64, Option<u64>),
) -> Result<Option<Uint8Array>, String> {
    with_lock(&format!("decode-lab:{url}"), fetch_through_cache(url, progress)).await
}

/// A model folder with files in this browser's cache: its address (as the
/// cache keys it: absolute) and the bytes of its files.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub base: String,
    pub bytes: u64,
}

/// Every model folder with files in the cache, largest first.
pub async fn stored_models() -> Vec<Stored> {
    let Some(c) = model_cache().await else { return Vec::new() };
    let Ok(keys) = JsFuture::from(c.keys()).await else { return Vec::new() };
    let mut out: Vec<Stored> = Vec::new();
    for request in js_sys::Array::from(&keys).iter() {
        let Ok(request) = request.dyn_into::<web_sys::Request>() else { continue };
        let url = request.url();
        let Some((base, _)) = url.rsplit_once('/') else { continue };
        let base = format!("{base}/");
        let bytes = match JsFuture::from(c.match_with_request(&request)).await {
            Ok(r) => stored_size(r.unchecked_into()).await,
            Err(_) => 0,
        };
        match out.iter_mut().find(|s| s.base == base) {
            Some(s) => s.bytes += bytes,
            None => out.push(Stored { base, bytes }),
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.bytes));
    out
}

/// A cached response's size: its Content-Length, else its body's (a picked
/// file stored as it is has no header; its blob's size is known without reading it).
async fn stored_size(r: Response) -> u64 {
    if let Some(n) = content_length(&r) {
        return n;
    }
    let Ok(blob) = r.blob() else { return 0 };
    match JsFuture::from(blob).await {
        Ok(b) => b.unchecked_into::<web_sys::Blob>().size() as u64,
        Err(_) => 0,
    }
}

/// Removes every cached file under `base` (a [`Stored::base`]).
pub async fn forget_model(base: &str) {
    let Some(c) = model_cache().await else { return };
    let Ok(keys) = JsFuture::from(c.keys()).await else { return };
    for request in js_sys::Array::from(&keys).iter() {
        let Ok(request) = request.dyn_into::<web_sys::Request>() else { continue };
        if request.url().starts_with(base) {
            let _ = JsFuture::from(c.delete_with_request(&request)).await;
        }
    }
}

/// The model cache's response for `url`, if it has one.
async fn cached_response(url: &str) -> Option<Response> {
    let c = model_cache().await?;
    JsFuture::from(c.match_with_str(url)).await.ok()?.dyn_into().ok()
}

/// A response's Content-Length, when it says.
fn content_length(r: &Response) -> Option<u64> {
    r.headers().get("content-length").ok().flatten()?.parse().ok()
}

/// Whether `url` is in the model cache.
pub async fn cached(url: &str) -> bool {
    cached_response(url).await.is_some()
}

/// Whether `url` exists, asked with a HEAD request (nothing downloaded), and
/// its size when the server says.
pub async fn head(url: &str) -> Result<Option<Option<u64>>, String> {
    let window = web_sys::window().ok_or("no window")?;
    if let Some(r) = cached_response(url).await {
        return Ok(Some(content_length(&r)));
    }
    let init = web_sys::RequestInit::new();
    init.set_method("HEAD");
    let r: Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(|e| format!("could not reach {url}: {}", js_error(&e)))?
        .dyn_into()
        .map_err(|_| format!("{url}: not a response"))?;
    if !r.ok() {
        return Ok(None);
    }
    Ok(Some(content_length(&r)))
}

async fn fetch_through_cache(
    url: &str,
    progress: impl Fn(u64, Option<u64>),
) -> Result<Option<Uint8Array>, String> {
    if let Some(r) = cached_response(url).await {
        let total = content_length(&r);
        let bytes = read_body(url, &r, total, &progress).await?;
        // Used only as it was stored: its size and checksum as recorded at download.
        let checked = match model_cache().await {
            Some(c) => check_stored(&c, url, &bytes).await,
            None => Ok(()),
        };
        match checked {
            Ok(()) => return Ok(Some(bytes)),
            Err(why) => {
                evict(url).await;
                notice(format!(
                    "The stored copy of {} {why}: downloading it again.",
                    file_name(url)
                ));
            }
        }
    }
    if let Some(c) = model_cache().await {
        match record_of(&c, url).await.as_deref() {
            Some(ABSENT) => return Ok(None), // as the server said last time
            Some(PENDING) => notice(format!(
                "The last download of {} did not finish (the network dropped or the tab closed): downloading it again.",
                file_name(url)
            )),
            _ => {}
        }
        // Marked as begun: a tab closed midway leaves this mark, not a file.
        if let Ok(mark) = text_response(PENDING) {
            let _ = JsFuture::from(c.put_with_str(&checksum_key(url), &mark)).await;
        }
    }
    fetch_and_store(url, progress).await
}

/// Downloads `url`, stores it with its size and checksum once it has arrived
/// whole (a download cut midway stores nothing), and returns its bytes.
async fn fetch_and_store(
    url: &str,
    progress: impl Fn(u64, Option<u64>),
) -> Result<Option<Uint8Array>, String> {
    let window = web_sys::window().ok_or("no window")?;
    let r: Response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|e| format!("could not fetch {url}: {}", js_error(&e)))?
        .dyn_into()
        .map_err(|_| format!("{url}: not a response"))?;
    if r.status() == 404 {
        // Recorded in place of the begun-download mark: known next time, offline too.
        if let (Some(c), Ok(absent)) = (model_cache().await, text_response(ABSENT)) {
            let _ = JsFuture::from(c.put_with_str(&checksum_key(url), &absent)).await;
        }
        return Ok(None);
    }
    if !r.ok() {
        return Err(format!("could not fetch {url}: HTTP {} {}", r.status(), r.status_text()));
    }
    let cache = model_cache().await;
    // Stored while we read our copy; Cache Storage commits a body only when it
    // has arrived whole, so a broken download leaves no entry.
    let stored = match (&cache, r.clone()) {
        (Some(c), Ok(copy)) => Some(c.put_with_str(url, &copy)),
        _ => None,
    };
    let total = content_length(&r);
    let bytes = read_body(url, &r, total, &progress).await?;
    if total.is_some_and(|t| t != u64::from(bytes.length())) {
        // The short body may still be committed: wait for it, then drop it.
        // The begun-download mark stays, so the next visit says it restarts.
        if let (Some(c), Some(put)) = (&cache, stored) {
            let _ = JsFuture::from(put).await;
            let _ = JsFuture::from(c.delete_with_str(url)).await;
        }
        return Err(format!(
            "the download of {url} broke off after {} of {} bytes: reload to download it again",
            bytes.length(),
            total.unwrap_or(0)
        ));
    }
    if let (Some(c), Some(put)) = (&cache, stored) {
        // In the cache before the lock is released, for the next embed; the
        // checksum last, so an entry without one was never finished.
        let done = match JsFuture::from(put).await {
            Ok(_) => record_checksum(c, url, &bytes).await,
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            evict(url).await;
            notice(store_failed(url, &e));
        }
    }
    Ok(Some(bytes))
}

/// Runs `job` holding the Web Lock `name` (shared by every page and frame of
/// this origin); runs it at once where the browser has no Web Locks.
async fn with_lock<T>(name: &str, job: impl std::future::Future<Output = T>) -> T {
    let locks = web_sys::window()
        .and_then(|w| Reflect::get(&w.navigator(), &"locks".into()).ok())
        .filter(|l| !l.is_undefined() && !l.is_null());
    let request = locks
        .as_ref()
        .and_then(|l| Reflect::get(l, &"request".into()).ok()?.dyn_into::<js_sys::Function>().ok());
    let (Some(locks), Some(request)) = (locks, request) else { return job.await };
    // `held` is what the lock callback returns: the lock lasts until it resolves.
    let mut release = None;
    let held = js_sys::Promise::new(&mut |resolve, _| release = Some(resolve));
    let mut grant = None;
    let granted = js_sys::Promise::new(&mut |resolve, _| grant = Some(resolve));
    let callback = Closure::once_into_js(move |_lock: JsValue| {
        if let Some(grant) = grant {
            let _ = grant.call0(&JsValue::NULL);
        }
        held
    });
    if request.call2(&locks, &name.into(), &callback).is_err() {
        return job.await;
    }
    let _ = JsFuture::from(granted).await;
    let out = job.await;
    if let Some(release) = release {
        let _ = release.call0(&JsValue::NULL);
    }
    out
}

async fn read_body(
    url: &str,
    response: &Response,
    total: Option<u64>,
    progress: &impl Fn(u64, Option<u64>),
) -> Result<Uint8Array, String> {
    let Some(body) = response.body() else {
        return Ok(Uint8Array::new_with_length(0));
    };
    let reader: web_sys::ReadableStreamDefaultReader =
        body.get_reader().dyn_into().map_err(|_| format!("{url}: unreadable body"))?;
    // In a JavaScript array, outside the WebAssembly memory (which keeps its
    // peak): the loader reads the weights from it a tensor at a time.
    let mut bytes = new_array(url, total.map_or(0, |t| t.min(FILE_LIMIT)))?;
    let mut len: u32 = 0;
    progress(0, total);
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| format!("download of {url} broke off: {}", js_error(&e)))?;
        let done =
            Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true);
        if done {
            break;
        }
        if let Ok(value) = Reflect::get(&chunk, &"value".into()) {
            let value = Uint8Array::new(&value);
            let need = u64::from(len) + u64::from(value.length());
            if need > FILE_LIMIT {
                let limit = size(FILE_LIMIT);
                return Err(format!("{url} is over {limit}, more than a page can hold"));
            }
            if need > u64::from(bytes.length()) {
                // A body longer than its length said, or of no stated length.
                let grown = new_array(url, need.max(2 * u64::from(len)).min(FILE_LIMIT))?;
                grown.set(&bytes.subarray(0, len), 0);
                bytes = grown;
            }
            bytes.set(&value, len);
            len = need as u32;
        }
        progress(u64::from(len), total);
    }
    Ok(match len == bytes.length() {
        true => bytes,
        false => bytes.slice(0, len),
    })
}

/// A zeroed array of `len` bytes for `url`'s body, or why the browser gave
/// none (out of memory: an error, where a failed allocation would abort).
fn new_array(url: &str, len: u64) -> Result<Uint8Array, String> {
    let class = Reflect::get(&js_sys::global(), &"Uint8Array".into()).unwrap_or_default();
    let class: &js_sys::Function = class.unchecked_ref();
    let made = Reflect::construct(class, &js_sys::Array::of1(&(len as f64).into()));
    made.map(JsCast::unchecked_into)
        .map_err(|e| format!("no room for {url} ({}) in this page: {}", size(len), js_error(&e)))
}

//! The query string the page was opened with, parsed once
//! (`contract::Query`). A leaf module: the app shell, the URL state and the
//! widgets read parameters through it.

use contract::Query;

thread_local! {
    /// Read once: the address bar is rewritten as controls move, and a widget
    /// mounting later (after the model loaded) must still see what the link
    /// asked for.
    static OPENED_WITH: Query = Query::parse(
        &web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default(),
    );
}

/// Runs `f` on the query the page was opened with.
pub fn with_opened<T>(f: impl FnOnce(&Query) -> T) -> T {
    OPENED_WITH.with(f)
}

/// The parameter `name` of the URL the page was opened with (the last one
/// when repeated).
pub fn query(name: &str) -> Option<String> {
    with_opened(|q| q.get(name).map(str::to_string))
}

//! The query string the page was opened with. A leaf module: the route, the
//! URL state and the widgets read parameters through it.

thread_local! {
    /// Read once: the address bar is rewritten as controls move, and a widget
    /// mounting later (after the model loaded) must still see what the link
    /// asked for.
    static OPENED_WITH: String = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
}

/// The query parameter `name` of the URL the page was opened with (the last
/// one when a name is repeated, so an appended value wins).
pub fn query(name: &str) -> Option<String> {
    OPENED_WITH.with(|search| {
        let params = web_sys::UrlSearchParams::new_with_str(search).ok()?;
        let all = params.get_all(name);
        let last = all.length().checked_sub(1)?;
        all.get(last).as_string()
    })
}

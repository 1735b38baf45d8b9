//! A box that scrolls sideways (a wide table, tree or chart): focusable and
//! named, so a keyboard can scroll it and a screen reader announces what it
//! holds (WCAG 2.1.1; axe's `scrollable-region-focusable`). Every such box
//! on the page is this one component.

use leptos::prelude::*;

#[component]
pub fn Scroll(
    /// What the box holds, as a screen reader announces it.
    #[prop(into)]
    label: String,
    /// Its CSS class (how it scrolls and sizes).
    #[prop(default = "table-scroll")]
    class: &'static str,
    children: Children,
) -> impl IntoView {
    view! { <div class=class tabindex="0" role="region" aria-label=label>{children()}</div> }
}

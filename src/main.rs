//! Decode Lab in the browser: mounts the app. Every failure is shown in the
//! page; the panic hook exists so that, should a panic ever happen, its text is
//! visible instead of a dead page.

mod alloc;
mod app;
mod browser;
mod controls;
mod csv;
mod custom_logits;
mod distribution;
mod driver;
mod embed;
mod lab;
mod load;
mod offline;
mod picker;
mod playground;
mod png;
mod query;
mod registry;
mod remembered;
mod scroll;
mod selftest;
mod url_state;
mod widgets;
mod worker;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        app::show_fatal(&info.to_string());
    }));
    leptos::mount::mount_to_body(app::App);
}

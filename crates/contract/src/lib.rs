//! Decode Lab's URL contract (documented in EMBEDDING.md): which widget a
//! link opens, which controls it shows or locks, every control's value, and
//! an author's own logits — read from a query string into plain values, each
//! value that could not be taken as given turned into a notice for the page.
//!
//! Pure and UI-free (no leptos, no browser), so the app in wasm and the
//! native tests and fuzz targets run the very same code.
//!
//! Data flow: query string → [`Query`] → [`Route`] (widget, embed,
//! `controls=`) and [`read_controls`] (values, notices) → the app's signals.

pub mod controls;
pub mod logits;
pub mod marks;
pub mod model_ref;
pub mod query;
pub mod quiz;
pub mod read;
pub mod route;
pub mod turns;
pub mod widgets;

pub use controls::{echo, Control, Drives, Input, Range, Spec, Taken, DEFAULT_PROMPT, SPECS};
pub use logits::{parse_logits, parse_sets, LogitSets};
pub use marks::{Mark, Marks};
pub use model_ref::model_base;
pub use query::Query;
pub use read::{
    backend_cpu, column_values, read_controls, read_page, weights_choice, KernelsChoice, Page, Val,
    WeightsChoice,
};
pub use route::{Route, Shown};
pub use widgets::{
    Action, Preset, Shows, Widget, WidgetSpec, BEAM_PROMPT, CONFIDENT_PROMPT, LONG_TAILED_PROMPT,
    WIDGETS,
};

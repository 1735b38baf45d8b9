//! Serving lessons (issue 35, in progress on this branch): an arrival trace
//! replayed by schedulers over `engine::Batch`'s slots.

mod figures;
mod run;
pub mod trace;

pub use figures::{figures, Figures, Spread};
pub use run::{replay, Cell, Replay, Scheduler, Served};

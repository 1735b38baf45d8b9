//! Serving lessons: an arrival trace replayed by schedulers over
//! `engine::Batch`'s slots, and each request's run alone to check them by.

mod figures;
mod run;
pub mod trace;

pub use figures::{figures, Figures, Spread};
pub use run::{replay, run_alone, Cell, Replay, Scheduler, Served};

/// The prompts a trace draws from unless the user gives their own.
pub const PROMPTS: [&str; 4] =
    ["ROMEO:\n", "JULIET:\nO Romeo,", "To be, or not to be", "KING HENRY:\n"];

//! When the page draws what a job changes. A step writes its chip, the next
//! distribution and the stats into their signals at once (so the next step
//! reads them), but while a job runs the views are told at most every
//! [`DRAW_MS`]: each redraw is a frame of layout, paint and compositing,
//! several milliseconds of the page's own thread and the compositor's,
//! which at 50 tokens a second kept busy the second core that a CPU
//! worker's coworker computes on. A job's first chip is drawn at once (the
//! first token shows as soon as it is chosen), and everything when the job
//! ends.
//!
//! Redraws follow the steps: a step's changes come just before and just
//! after it hands its token to the worker, so a redraw due then runs its
//! effects while the worker computes, not when its answer arrives (where it
//! would delay the next step). A timer draws what waits only when no step
//! comes for [`FALLBACK_MS`] (a model slower than that per token).

use leptos::prelude::*;
use wasm_bindgen::prelude::*;

use super::{Chip, Driver, Stats};
use crate::distribution::StepInput;

/// The shortest time between two redraws while a job runs: 20 a second.
const DRAW_MS: f64 = 50.0;

/// How long a change waits for a step to draw it before a timer does.
const FALLBACK_MS: f64 = 100.0;

/// What a job changed that the views have not been told of, and when they
/// last were.
#[derive(Default)]
pub(super) struct Unshown {
    chips: bool,
    next: bool,
    stats: bool,
    /// A chip was drawn since the job started.
    chip_drawn: bool,
    last: Option<web_time::Instant>,
    /// The fallback timer, while one is set.
    timer: Option<i32>,
}

impl Driver {
    /// Changes the chips, drawn as [`draw_soon`](Self::draw_soon) says.
    pub(super) fn change_chips(self, f: impl FnOnce(&mut Vec<Chip>)) {
        self.change(self.chips, f, |u| &mut u.chips);
    }

    /// Sets the next distribution, drawn as [`draw_soon`](Self::draw_soon) says.
    pub(super) fn change_next(self, next: StepInput) {
        self.change(self.next, |n| *n = Some(next), |u| &mut u.next);
    }

    /// Changes the stats, drawn as [`draw_soon`](Self::draw_soon) says.
    pub(super) fn change_stats(self, f: impl FnOnce(&mut Stats)) {
        self.change(self.stats, f, |u| &mut u.stats);
    }

    /// `f` on `signal` without telling its views, `flag` marking it unshown.
    fn change<T: 'static + Send + Sync>(
        self,
        signal: RwSignal<T>,
        f: impl FnOnce(&mut T),
        flag: fn(&mut Unshown) -> &mut bool,
    ) {
        signal.update_untracked(f);
        self.unshown.update_value(|u| *flag(u) = true);
        self.draw_soon();
    }

    /// Draws now when no job runs, when a job's first chip waits, or when
    /// the last redraw is [`DRAW_MS`] old; else sets the fallback timer.
    fn draw_soon(self) {
        let (now, timer) = self.unshown.with_value(|u| {
            let first_chip = u.chips && !u.chip_drawn;
            let age = u.last.map_or(f64::INFINITY, |t| t.elapsed().as_secs_f64() * 1e3);
            let now = !self.generating.get_untracked() || first_chip || age >= DRAW_MS;
            (now, u.timer.is_none().then_some(FALLBACK_MS - age))
        });
        if now {
            return self.draw();
        }
        let Some(wait) = timer else { return };
        let later = Closure::once_into_js(move || {
            self.unshown.update_value(|u| u.timer = None);
            self.draw();
        });
        let set = web_sys::window().and_then(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(
                later.unchecked_ref(),
                wait.max(0.0).ceil() as i32,
            )
            .ok()
        });
        match set {
            Some(handle) => self.unshown.update_value(|u| u.timer = Some(handle)),
            None => self.draw(), // no timer to wait for: draw now
        }
    }

    /// Tells the views of everything changed since they last drew.
    pub(super) fn draw(self) {
        let mut u = Unshown::default();
        self.unshown.update_value(|now| {
            u = std::mem::take(now);
            now.chip_drawn = u.chip_drawn || u.chips;
            now.last = Some(web_time::Instant::now());
        });
        if let (Some(timer), Some(w)) = (u.timer, web_sys::window()) {
            w.clear_timeout_with_handle(timer); // nothing left for it to draw
        }
        if u.chips {
            self.chips.notify();
        }
        if u.next {
            self.next.notify();
        }
        if u.stats {
            self.stats.notify();
        }
    }

    /// A job ends: everything it changed is drawn, and its next one's
    /// first chip will be drawn at once.
    pub(super) fn draw_job_end(self) {
        self.draw();
        self.unshown.update_value(|u| u.chip_drawn = false);
    }
}

//! A second thread's share of the CPU twins' two big products, for a CPU
//! engine whose thread cannot share memory with another: the browser's CPU
//! worker (wasm without threads) gets a second worker that holds its own copy
//! of part of every large matrix (`cpu::coworker::Panels`). While one is
//! installed on this thread, [`matmul`](super::matmul) and
//! [`lm_head`](super::lm_head) hand it x, compute their own part meanwhile
//! and take its part back. Each output is still computed whole by one thread
//! with the arithmetic of an unsplit run, so the numbers are the same bit for
//! bit; a coworker that fails is dropped and its part computed here.

use std::cell::RefCell;

use super::matrix::Matrix;

/// The other thread, as the engine's thread sees it.
pub trait Coworker {
    /// Has the coworker start on its part of job `job` (an index into the
    /// matrices it was installed with) for rows `x`; false if it cannot.
    fn start(&mut self, job: usize, x: &[f32]) -> bool;
    /// Waits for that part into `out` (`(rows, its width)`); false if the
    /// coworker failed (the caller then computes it).
    fn finish(&mut self, out: &mut [f32]) -> bool;
}

/// One matrix the coworker holds part of: where, and from which column
/// (matmul) or vocabulary row (LM head) its part starts.
struct Held {
    words: *const u32,
    split: usize,
}

struct Installed {
    held: Vec<Held>,
    rows_max: usize,
    coworker: Box<dyn Coworker>,
}

thread_local! {
    static INSTALLED: RefCell<Option<Installed>> = const { RefCell::new(None) };
}

/// Puts `coworker` to work on this thread's products with the matrices
/// `held` (each with its split, in the coworker's job order) for at most
/// `rows_max` rows of x at a time (what its exchange buffer holds). A matrix
/// is known by where its words are, so a converted copy of the model (another
/// format) is not mistaken for the one the coworker holds.
pub fn install(held: &[(&Matrix, usize)], rows_max: usize, coworker: Box<dyn Coworker>) {
    let held = held.iter().map(|&(m, split)| Held { words: m.words().as_ptr(), split }).collect();
    INSTALLED.with_borrow_mut(|i| *i = Some(Installed { held, rows_max, coworker }));
}

/// Takes the coworker off this thread (products run here alone again).
pub fn uninstall() {
    INSTALLED.with_borrow_mut(|i| *i = None);
}

/// Whether a coworker is installed on this thread.
pub fn installed() -> bool {
    INSTALLED.with_borrow(Option::is_some)
}

/// If the coworker holds part of `w` and `x` (`rows` rows) fits its buffer:
/// starts it and returns where its part starts.
pub(crate) fn start(w: &Matrix, x: &[f32], rows: usize) -> Option<usize> {
    INSTALLED.with_borrow_mut(|i| {
        let i = i.as_mut()?;
        let words = w.words().as_ptr();
        let job = i.held.iter().position(|h| h.words == words)?;
        (rows <= i.rows_max && i.coworker.start(job, x)).then_some(i.held[job].split)
    })
}

/// The coworker's part of the product [`start`] began, into `out`; false
/// (and the coworker uninstalled) if it failed.
pub(crate) fn finish(out: &mut [f32]) -> bool {
    let done = INSTALLED.with_borrow_mut(|i| i.as_mut().is_some_and(|i| i.coworker.finish(out)));
    if !done {
        uninstall();
    }
    done
}

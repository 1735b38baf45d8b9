//! A second thread's share of the CPU twins' two big products, for a CPU
//! engine whose thread cannot share memory with another: the browser's CPU
//! worker (wasm without threads) gets a second worker that holds its own copy
//! of part of every large matrix (`cpu::coworker::Panels`). While one is
//! installed on this thread, [`matmul`](super::matmul) and
//! [`lm_head`](super::lm_head) hand it x, compute their own part meanwhile
//! (straight from the matrix where their part is one run of its words —
//! column panels, head rows — else from a copy of their part laid out on
//! its own: half of each row of a row-major matrix streams from memory
//! nearly as slowly as the whole row) and take its part back. Each output is still computed whole by one thread
//! with the arithmetic of an unsplit run, so the numbers are the same bit for
//! bit; a coworker that fails is dropped and its part computed here.

use std::cell::RefCell;

use crate::storage::matrix::Matrix;

/// The other thread, as the engine's thread sees it.
pub trait Coworker {
    /// Has the coworker start on its part of job `job` (an index into the
    /// matrices it was installed with) for rows `x`; false if it cannot.
    fn start(&mut self, job: usize, x: &[f32]) -> bool;
    /// Waits for that part into `out` (`(rows, its width)`); false if the
    /// coworker failed (the caller then computes it).
    fn finish(&mut self, out: &mut [f32]) -> bool;
    /// Has the coworker make a variant of the model it loaded (`code`: a
    /// `model::Variant`'s numbers) and hold its part of it as jobs
    /// `first_job..` (dropping any it holds from there); false if it cannot.
    fn begin_variant(&mut self, _first_job: usize, _code: [i32; 4]) -> bool {
        false
    }
    /// Waits for that variant: whether the coworker holds its part now.
    fn end_variant(&mut self) -> bool {
        false
    }
}

/// A matrix the coworker holds part of, as the engine's thread names it:
/// the matrix, where its outputs split, and its outputs.
pub type Split<'a> = (&'a Matrix, usize, usize);

/// This thread's part of job `job`, a product with matrix `w`, for rows `x`
/// (`(rows, split)`): from `w` itself, or from its own copy of that part.
pub type Mine = Box<dyn Fn(usize, &Matrix, &[f32]) -> Option<Vec<f32>>>;

/// One matrix the coworker holds part of: where, and from which of its `n`
/// outputs (a matmul's columns, the LM head's vocabulary rows) its part starts.
struct Held {
    words: *const u32,
    split: usize,
    n: usize,
}

struct Installed {
    held: Vec<Held>,
    rows_max: usize,
    /// This thread's parts: each from its first job on.
    mine: Vec<(usize, Mine)>,
    coworker: Box<dyn Coworker>,
}

impl Installed {
    /// This thread's part of job `job`.
    fn mine(&self, job: usize, w: &Matrix, x: &[f32]) -> Option<Vec<f32>> {
        let (first, mine) = self.mine.iter().rev().find(|(first, _)| *first <= job)?;
        mine(job - first, w, x)
    }
}

thread_local! {
    static INSTALLED: RefCell<Option<Installed>> = const { RefCell::new(None) };
    /// An installed coworker set aside ([`set_active`]): kept, but not handed work.
    static PARKED: RefCell<Option<Installed>> = const { RefCell::new(None) };
    /// Products the coworker has shared on this thread ([`shared`]).
    static SHARED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many products the coworker has computed part of on this thread so
/// far: a step shared its work when this grew (a model the coworker holds
/// no part of, another format of it, runs here alone though one is installed).
pub fn shared() -> u64 {
    SHARED.get()
}

/// Puts `coworker` to work on this thread's products with the matrices
/// `held` (each with its split and outputs, in the coworker's job order) for at most
/// `rows_max` rows of x at a time (what its exchange buffer holds), this
/// thread computing its part with `mine`. A matrix is known by where its
/// words are, so a converted copy of the model (another format) is not
/// mistaken for the one the coworker holds.
pub fn install(held: &[Split], rows_max: usize, mine: Mine, coworker: Box<dyn Coworker>) {
    let held = held_of(held);
    let mine = vec![(0, mine)];
    INSTALLED.with_borrow_mut(|i| *i = Some(Installed { held, rows_max, mine, coworker }));
}

fn held_of(held: &[Split]) -> Vec<Held> {
    held.iter().map(|&(m, split, n)| Held { words: m.words().as_ptr(), split, n }).collect()
}

/// The installed coworker, taken off this thread while it makes a variant
/// (products meanwhile run here alone): [`begin_variant`]'s answer.
pub struct Making {
    installed: Installed,
    parked: bool,
}

/// Asks the installed coworker (handed work or not) to make the variant
/// `code` too; `None` when there is none or it cannot.
pub fn begin_variant(code: [i32; 4]) -> Option<Making> {
    let (mut installed, parked) = match INSTALLED.with_borrow_mut(Option::take) {
        Some(i) => (i, false),
        None => (PARKED.with_borrow_mut(Option::take)?, true),
    };
    // The variant's jobs follow those held (nothing is added until `end`).
    let asked = installed.coworker.begin_variant(installed.held.len(), code);
    let making = Making { installed, parked };
    if asked {
        Some(making)
    } else {
        making.put_back();
        None
    }
}

impl Making {
    /// Waits for the coworker's part of the variant; when it holds it and
    /// this thread made the variant too (`made`: its matrices as
    /// [`install`]'s `held`, and this thread's part), their products are
    /// shared from then on.
    pub fn end(mut self, made: Option<(&[Split], Mine)>) {
        let held = self.installed.coworker.end_variant();
        if let (true, Some((matrices, mine))) = (held, made) {
            let i = &mut self.installed;
            i.mine.push((i.held.len(), mine));
            i.held.extend(held_of(matrices));
        }
        self.put_back();
    }

    fn put_back(self) {
        let cell = if self.parked { &PARKED } else { &INSTALLED };
        cell.with_borrow_mut(|c| *c = Some(self.installed));
    }
}

/// Takes the coworker off this thread (products run here alone again).
pub fn uninstall() {
    INSTALLED.with_borrow_mut(|i| *i = None);
    PARKED.with_borrow_mut(|i| *i = None);
}

/// Whether a coworker is installed on this thread and handed work.
pub fn installed() -> bool {
    INSTALLED.with_borrow(Option::is_some)
}

/// Whether a coworker is installed on this thread, handed work or not.
pub fn available() -> bool {
    installed() || PARKED.with_borrow(Option::is_some)
}

/// Hands the installed coworker work (`true`) or sets it aside (`false`:
/// products run here alone, the coworker keeps its part for later). The
/// numbers are the same either way.
pub fn set_active(on: bool) {
    let (from, to) = if on { (&PARKED, &INSTALLED) } else { (&INSTALLED, &PARKED) };
    if let Some(i) = from.with_borrow_mut(Option::take) {
        to.with_borrow_mut(|cell| *cell = Some(i));
    }
}

/// Both parts of the product of `x` (`rows` rows) with `w` when the
/// coworker holds part of `w` and x fits its buffer: this thread's
/// `(rows, split)` and the coworker's `(rows, n - split)`, computed at once;
/// `None` when the product is not shared. A coworker that fails is
/// uninstalled and its part computed by `theirs_here`.
pub(crate) fn split_product(
    w: &Matrix,
    x: &[f32],
    rows: usize,
    theirs_here: impl FnOnce(usize) -> Vec<f32>,
) -> Option<(usize, Vec<f32>, Vec<f32>)> {
    // Taken out of the cell while it works: this thread's part runs the same
    // kernels, which then find no coworker (and so compute it themselves).
    let mut i = INSTALLED.with_borrow_mut(Option::take)?;
    let shared = share(&mut i, w, x, rows);
    let failed = matches!(shared, Some((_, _, None)));
    if !failed {
        INSTALLED.with_borrow_mut(|cell| *cell = Some(i));
    }
    let (split, mine, theirs) = shared?;
    if theirs.is_some() {
        SHARED.set(SHARED.get() + 1);
    }
    Some((split, mine, theirs.unwrap_or_else(|| theirs_here(split))))
}

/// [`split_product`] with the coworker in hand: `None` when `w` is not
/// shared; the coworker's part `None` when it failed.
fn share(
    i: &mut Installed,
    w: &Matrix,
    x: &[f32],
    rows: usize,
) -> Option<(usize, Vec<f32>, Option<Vec<f32>>)> {
    let words = w.words().as_ptr();
    let job = i.held.iter().position(|h| h.words == words)?;
    let Held { split, n, .. } = i.held[job];
    if rows > i.rows_max || !i.coworker.start(job, x) {
        return None;
    }
    let mine = i.mine(job, w, x);
    let mut theirs = vec![0.0; rows * (n - split)]; // (rows, n - split)
    let done = i.coworker.finish(&mut theirs);
    Some((split, mine?, done.then_some(theirs)))
}

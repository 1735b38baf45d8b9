//! The model's side of [`fast::coworker`](crate::fast::coworker): which
//! products a coworker shares and what it holds for them. Both threads derive
//! the same list from the same model, so a job is just its index in it.
//!
//! A job is each block's four matmuls (the coworker takes the right half of
//! the columns, `split..n`) and the LM head (the second half of the
//! vocabulary rows): the products that read every weight once per token and
//! so bound a decode step. Each side computes its part straight from its
//! own copy of the model's matrix where that part is one run of its words
//! (column panels, head rows: the CPU layout's), else from a copy of the
//! part as a matrix of its own (contiguous, so its loops stream it); a
//! variant the coworker makes and drops is held as copies.

use std::ops::Range;

use crate::error::{EngineError, Result};
use crate::fast;
use crate::fast::coworker::{self, Coworker};
use crate::model::{Config, Model, Variant};
use crate::storage::format::SHARD_ALIGN;
use crate::storage::matrix::Matrix;

/// Rows of x a job takes at most: a decode step (one row per sequence) or a
/// prompt of up to this many tokens; longer prefills run on one thread.
pub const ROWS_MAX: usize = 64;

/// One shared product, as the engine's thread holds it.
struct Job<'a> {
    w: &'a Matrix,
    /// `Some` for a matmul (its bias, columns split), `None` for the LM head (rows split).
    bias: Option<&'a [f32]>,
    split: usize,
}

impl Job<'_> {
    /// Outputs along the split: columns (matmul) or head rows (LM head).
    fn n(&self) -> usize {
        if self.bias.is_some() {
            self.w.cols
        } else {
            self.w.rows
        }
    }

    /// The outputs of one side.
    fn part(&self, side: Side) -> Range<usize> {
        match side {
            Side::Mine => 0..self.split,
            Side::Theirs => self.split..self.n(),
        }
    }

    /// The coworker's columns (matmul) or head rows (LM head).
    fn theirs(&self) -> Range<usize> {
        self.part(Side::Theirs)
    }

    /// Floats of one row of x (its input width).
    fn x_width(&self) -> usize {
        if self.bias.is_some() {
            self.w.rows
        } else {
            self.w.cols
        }
    }
}

/// Where a product of `n` outputs splits: its middle, on a shard boundary.
fn middle(n: usize) -> usize {
    (n / 2).next_multiple_of(SHARD_ALIGN)
}

/// Weights (multiply-adds per row of x) a product must exceed to be shared:
/// handing it over and back costs tens of microseconds, about what half of a
/// product this size takes in wasm. (The bundled model's largest, 2,048 ×
/// 256, is exactly this and stays on one thread; GPT-2-124M's smallest,
/// 768 × 768, is shared.)
pub const MIN_SHARED: usize = 1 << 19;

/// The model's shared products in job order: every block matrix and the LM
/// head of more than [`MIN_SHARED`] weights.
fn jobs(model: &Model) -> Vec<Job<'_>> {
    let w = &model.weights;
    let mut jobs = Vec::with_capacity(4 * w.layers.len() + 1);
    for lw in &w.layers {
        let pairs = [
            (&lw.c_attn_weight, &lw.c_attn_bias),
            (&lw.attn_proj_weight, &lw.attn_proj_bias),
            (&lw.c_fc_weight, &lw.c_fc_bias),
            (&lw.mlp_proj_weight, &lw.mlp_proj_bias),
        ];
        for (m, bias) in pairs {
            jobs.push(Job { w: m, bias: Some(bias), split: middle(m.cols) });
        }
    }
    let head = w.lm_head();
    jobs.push(Job { w: head, bias: None, split: middle(head.rows) });
    // Both sides non-empty: a degenerate shape (a 1-row head) is not split.
    jobs.retain(|j| big(j.w.rows, j.w.cols) && 0 < j.split && j.split < j.n());
    jobs
}

/// Whether a `(rows, cols)` product is worth sharing.
fn big(rows: usize, cols: usize) -> bool {
    rows * cols > MIN_SHARED
}

/// Whether a model of `config` has products worth a coworker (known before
/// its weights are: the download question counts the coworker's memory).
pub fn worth_sharing(config: &Config) -> bool {
    let (e, i) = (config.n_embd, config.n_inner);
    [(e, config.qkv_width()), (e, e), (e, i), (i, e), (config.vocab_size, e)]
        .iter()
        .any(|&(r, c)| big(r, c))
}

/// Whether each side's part of job `j` can be cut out of its matrix whole
/// (`Matrix::columns`: whole words, int4 groups or panels of every row;
/// `Matrix::shard`: head rows, the split on a shard boundary).
fn cuts(j: &Job) -> bool {
    match j.bias {
        Some(_) => j.w.column_step().is_some_and(|s| j.split.is_multiple_of(s)),
        None => j.split.is_multiple_of(SHARD_ALIGN),
    }
}

/// Floats of the exchange buffer's two regions: x (`(ROWS_MAX, widest input)`)
/// and the coworker's part of the output (`(ROWS_MAX, its widest part)`).
/// Both threads compute it from their model, so they agree on it. An error
/// says why the model gets no coworker.
pub fn buffer_floats(model: &Model) -> Result<(usize, usize)> {
    let jobs = jobs(model);
    if let Some(j) = jobs.iter().find(|j| !cuts(j)) {
        return Err(EngineError::Remote(format!(
            "a second worker takes whole words of each row, and a {} × {} {} matrix's rows are not",
            j.w.rows,
            j.w.cols,
            j.w.format.name()
        )));
    }
    if jobs.is_empty() {
        return Err(EngineError::Remote(
            "the model is small enough that one worker computes each step faster than two".into(),
        ));
    }
    let x = jobs.iter().map(Job::x_width).max().unwrap_or(0);
    let out = jobs.iter().map(|j| j.theirs().len()).max().unwrap_or(0);
    Ok((ROWS_MAX * x, ROWS_MAX * out))
}

/// Installs `coworker` on this thread for `model`'s products (this thread
/// computes its own part of each from `model`'s matrix, or from a copy of
/// it where the part is not one run of words: [`Side::Mine`] panels).
pub fn install(model: &Model, coworker: Box<dyn Coworker>) -> Result<()> {
    let (held, mine) = mine(model)?;
    coworker::install(&held, ROWS_MAX, mine, coworker);
    Ok(())
}

/// `model`'s shared matrices (each with its split and outputs) and this
/// thread's part of them.
fn mine(model: &Model) -> Result<(Vec<coworker::Split<'_>>, coworker::Mine)> {
    let mine = Panels::new(model, Side::Mine)?;
    let held = jobs(model).iter().map(|j| (j.w, j.split, j.n())).collect();
    Ok((held, Box::new(move |job: usize, w: &Matrix, x: &[f32]| mine.run(job, Some(w), x).ok())))
}

/// Each job's matrix in `model`, in job order: what [`Panels::run`] reads
/// a part held in place from.
pub fn job_matrices(model: &Model) -> Vec<&Matrix> {
    jobs(model).iter().map(|j| j.w).collect()
}

/// Makes `variant` of the loaded model `model` on this thread while the
/// installed coworker, if any, makes it from its own copy; once both have,
/// the variant's products are shared as the loaded model's are. (Made
/// from the same words by the same code, both sides' parts are the same.)
pub fn make_variant(model: &Model, variant: &Variant) -> Result<Model> {
    let making = coworker::begin_variant(variant.code());
    let made = variant.make(model);
    if let Some(making) = making {
        match made.as_ref().ok().and_then(|m| mine(m).ok()) {
            Some((held, mine)) => making.end(Some((&held, mine))),
            None => making.end(None),
        }
    }
    made
}

/// The coworker's side of [`make_variant`]: `variant` of `model` (its
/// loaded model), if its products fit an exchange buffer of `room` floats
/// (`buffer_floats`): its part, as panels.
pub fn their_variant(model: &Model, code: [i32; 4], room: (usize, usize)) -> Result<Panels> {
    let variant = Variant::from_code(code)
        .ok_or_else(|| EngineError::Remote(format!("no model variant {code:?}")))?;
    let made = variant.make(model)?;
    let (x, part) = buffer_floats(&made)?;
    if x > room.0 || part > room.1 {
        return Err(EngineError::Remote("the variant's products outgrow the buffer".into()));
    }
    Panels::copied(&made, Side::Theirs)
}

/// Which part of each product: the engine's thread's first outputs, or the
/// coworker's rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Mine,
    Theirs,
}

/// One side's part of each job's matrix (and bias).
pub struct Panels {
    parts: Vec<Part>, // (jobs)
}

/// One side's part of a job: its outputs (a matmul's columns, head rows),
/// their bias, and the part's own copy of the matrix's words unless it is
/// computed from the matrix itself (handed to [`Panels::run`]).
struct Part {
    outputs: Range<usize>,
    bias: Option<Vec<f32>>,
    own: Option<Matrix>,
}

impl Panels {
    /// `side`'s parts of `model`'s jobs, read from the model's own matrices
    /// where they are one run of words (whole panels of columns, head rows:
    /// at 124M f16, 124 MB of copies not made on each side), so the model
    /// must be kept and its job's matrix handed to [`run`](Self::run).
    pub fn new(model: &Model, side: Side) -> Result<Panels> {
        Panels::cut(model, side, true)
    }

    /// `side`'s parts of `model`'s jobs, each a copy of its own (the model
    /// may be dropped after: a variant the coworker makes).
    pub fn copied(model: &Model, side: Side) -> Result<Panels> {
        Panels::cut(model, side, false)
    }

    fn cut(model: &Model, side: Side, kept: bool) -> Result<Panels> {
        buffer_floats(model)?;
        let parts = jobs(model)
            .iter()
            .map(|j| {
                let c = j.part(side);
                let in_place = kept && (j.bias.is_none() || j.w.panel_major());
                let own = match (in_place, j.bias) {
                    (true, _) => None,
                    (false, Some(_)) => Some(j.w.columns(c.clone()).expect("checked by cuts()")),
                    (false, None) => Some(j.w.shard(c.start, c.end)),
                };
                let bias = j.bias.map(|b| b[c.clone()].to_vec());
                Part { outputs: c, bias, own }
            })
            .collect();
        Ok(Panels { parts })
    }

    /// Bytes of the copies of matrices held (words and scales).
    pub fn copied_bytes(&self) -> u64 {
        self.parts.iter().filter_map(|p| p.own.as_ref()).map(Matrix::bytes).sum()
    }

    /// Holds `more` as jobs `first_job..` (dropping any held from there).
    pub fn hold_at(&mut self, first_job: usize, more: Panels) {
        self.parts.truncate(first_job);
        self.parts.extend(more.parts);
    }

    /// Job `job`'s part for rows `x`: `(rows, its width)`, from its own copy
    /// or from `w`, the job's matrix (a part held in place).
    pub fn run(&self, job: usize, w: Option<&Matrix>, x: &[f32]) -> Result<Vec<f32>> {
        let no_job = || EngineError::Remote(format!("the coworker has no job {job}"));
        let part = self.parts.get(job).ok_or_else(no_job)?;
        let (w, c) = match (&part.own, w) {
            (Some(own), _) => (own, 0..part.outputs.len()),
            (None, Some(w)) => (w, part.outputs.clone()),
            (None, None) => return Err(no_job()),
        };
        let k = match part.bias {
            Some(_) => w.rows,
            None => w.cols,
        };
        let rows = x.len() / k.max(1);
        if rows * k != x.len() || rows > ROWS_MAX {
            return Err(EngineError::Remote(format!("job {job}: x of {} floats", x.len())));
        }
        let n = c.len();
        let mut out = vec![0.0; rows * n]; // (rows, n)
        match &part.bias {
            Some(bias) => fast::matmul::run_columns(x, w, c, bias, &mut out),
            None => fast::lm_head::rows_of(x, w, c, &mut out, n),
        }
        Ok(out)
    }
}

/// A coworker on a native thread (tests, and a check of the split anywhere
/// threads exist): jobs go over a channel to a thread holding the loaded
/// model and [`Panels`] of it and of its variants.
#[cfg(not(target_arch = "wasm32"))]
pub struct ThreadCoworker {
    asks: std::sync::mpsc::Sender<Ask>,
    parts: std::sync::mpsc::Receiver<Result<Vec<f32>>>,
}

/// What the engine's thread asks a [`ThreadCoworker`].
#[cfg(not(target_arch = "wasm32"))]
enum Ask {
    /// Job `.0`'s part for rows `.1`.
    Job(usize, Vec<f32>),
    /// A variant (its code) held from job `.0` on.
    Variant(usize, [i32; 4]),
}

#[cfg(not(target_arch = "wasm32"))]
impl ThreadCoworker {
    /// A thread holding its part of `model` (loaded as the engine's thread
    /// loaded it) and the model itself, for variants.
    pub fn spawn(model: std::sync::Arc<Model>) -> Result<ThreadCoworker> {
        let mut panels = Panels::new(&model, Side::Theirs)?;
        let room = buffer_floats(&model)?;
        let (asks, ask_rx) = std::sync::mpsc::channel::<Ask>();
        let (part_tx, parts) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let matrices = job_matrices(&model);
            for ask in ask_rx {
                let answer = match ask {
                    Ask::Job(job, x) => panels.run(job, matrices.get(job).copied(), &x),
                    Ask::Variant(first_job, code) => their_variant(&model, code, room)
                        .map(|more| panels.hold_at(first_job, more))
                        .map(|()| Vec::new()),
                };
                if part_tx.send(answer).is_err() {
                    break;
                }
            }
        });
        Ok(ThreadCoworker { asks, parts })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Coworker for ThreadCoworker {
    fn start(&mut self, job: usize, x: &[f32]) -> bool {
        self.asks.send(Ask::Job(job, x.to_vec())).is_ok()
    }

    fn finish(&mut self, out: &mut [f32]) -> bool {
        match self.parts.recv() {
            Ok(Ok(part)) if part.len() == out.len() => {
                out.copy_from_slice(&part);
                true
            }
            _ => false,
        }
    }

    fn begin_variant(&mut self, first_job: usize, code: [i32; 4]) -> bool {
        self.asks.send(Ask::Variant(first_job, code)).is_ok()
    }

    fn end_variant(&mut self) -> bool {
        matches!(self.parts.recv(), Ok(Ok(_)))
    }
}

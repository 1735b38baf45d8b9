//! The model's side of [`fast::coworker`](crate::fast::coworker): which
//! products a coworker shares and what it holds for them. Both threads derive
//! the same list from the same model, so a job is just its index in it.
//!
//! A job is each block's four matmuls (the coworker takes the right half of
//! the columns, `split..n`) and the LM head (the second half of the
//! vocabulary rows): the products that read every weight once per token and
//! so bound a decode step. The coworker holds only its part of each, as
//! matrices of their own (contiguous, so its loops stream them).

use std::ops::Range;

use crate::error::{EngineError, Result};
use crate::fast;
use crate::fast::coworker::{self, Coworker};
use crate::model::{Config, Model};
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
/// keeps a copy of its own part of each: [`Side::Mine`] panels).
pub fn install(model: &Model, coworker: Box<dyn Coworker>) -> Result<()> {
    let mine = Panels::new(model, Side::Mine)?;
    let held: Vec<(&Matrix, usize, usize)> =
        jobs(model).iter().map(|j| (j.w, j.split, j.n())).collect();
    let mine = Box::new(move |job: usize, x: &[f32]| mine.run(job, x).ok());
    coworker::install(&held, ROWS_MAX, mine, coworker);
    Ok(())
}

/// Which part of each product: the engine's thread's first outputs, or the
/// coworker's rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Mine,
    Theirs,
}

/// One side's part of each job's matrix (and bias), laid out on its own.
pub struct Panels {
    parts: Vec<(Matrix, Option<Vec<f32>>)>, // (jobs): panel or head shard, bias part
}

impl Panels {
    /// `side`'s parts of `model`'s jobs (the model may be dropped after).
    pub fn new(model: &Model, side: Side) -> Result<Panels> {
        buffer_floats(model)?;
        let parts = jobs(model)
            .iter()
            .map(|j| {
                let c = j.part(side);
                match j.bias {
                    Some(bias) => {
                        let panel = j.w.columns(c.clone()).expect("checked by cuts()");
                        (panel, Some(bias[c].to_vec()))
                    }
                    None => (j.w.shard(c.start, c.end), None),
                }
            })
            .collect();
        Ok(Panels { parts })
    }

    /// Job `job`'s part for rows `x`: `(rows, its width)`.
    pub fn run(&self, job: usize, x: &[f32]) -> Result<Vec<f32>> {
        let (w, bias) = self
            .parts
            .get(job)
            .ok_or_else(|| EngineError::Remote(format!("the coworker has no job {job}")))?;
        let (k, n) = match bias {
            Some(_) => (w.rows, w.cols),
            None => (w.cols, w.rows),
        };
        let rows = x.len() / k.max(1);
        if rows * k != x.len() || rows > ROWS_MAX {
            return Err(EngineError::Remote(format!("job {job}: x of {} floats", x.len())));
        }
        let mut out = vec![0.0; rows * n]; // (rows, n)
        match bias {
            Some(bias) => fast::matmul::run(x, w, bias, &mut out),
            None => fast::lm_head::run(x, w, 0, n, 0, rows, &mut out),
        }
        Ok(out)
    }
}

/// A coworker on a native thread (tests, and a check of the split anywhere
/// threads exist): jobs go over a channel to a thread holding [`Panels`].
#[cfg(not(target_arch = "wasm32"))]
pub struct ThreadCoworker {
    jobs: std::sync::mpsc::Sender<(usize, Vec<f32>)>,
    parts: std::sync::mpsc::Receiver<Result<Vec<f32>>>,
}

#[cfg(not(target_arch = "wasm32"))]
impl ThreadCoworker {
    /// A thread holding `panels`.
    pub fn spawn(panels: Panels) -> ThreadCoworker {
        let (jobs, job_rx) = std::sync::mpsc::channel::<(usize, Vec<f32>)>();
        let (part_tx, parts) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (job, x) in job_rx {
                if part_tx.send(panels.run(job, &x)).is_err() {
                    break;
                }
            }
        });
        ThreadCoworker { jobs, parts }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Coworker for ThreadCoworker {
    fn start(&mut self, job: usize, x: &[f32]) -> bool {
        self.jobs.send((job, x.to_vec())).is_ok()
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
}

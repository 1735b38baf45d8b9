//! A batched decode step on the GPU: one token for each of several sessions
//! of one model in one compute pass and one submit. The op list
//! ([`plan::batch`]) is built once for the batch's sessions, binding each
//! one's KV cache; a step writes the active sequences' tokens (packed into
//! rows 0..), the parameters that changed (each sequence's position), and
//! reads back one row of logits per active sequence.

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::ops::{self, Op, SessionBuffers};
use crate::gpu::plan::{self, Pass, Place, Seat};
use crate::gpu::runner::{Logits, Runner};
use crate::gpu::{GpuModel, GpuSession};
use crate::step::{check_input, StepStats};

/// The op list and runner of a batch over a fixed set of sessions.
pub struct GpuBatch {
    gpu: Rc<GpuModel>,
    runner: Runner,
    ops: Vec<Op>,
    n_seqs: usize,
}

impl GpuBatch {
    /// A batch over `sessions` (one model; the op list binds their caches,
    /// so the batch must be used with these sessions in this order).
    pub fn new(sessions: &[&GpuSession]) -> Result<GpuBatch> {
        let Some(first) = sessions.first() else {
            return Err(EngineError::Batch("a batch needs at least one sequence".into()));
        };
        let gpu = first.shared().clone();
        if sessions.iter().any(|s| !Rc::ptr_eq(s.shared(), &gpu)) {
            return Err(EngineError::Batch("the sequences run different models".into()));
        }
        if sessions.iter().any(|s| s.policy().ranks_by_mass()) {
            return Err(EngineError::Batch(
                "a heavy-hitter cache keeps its attention totals per session: it decodes alone, not in a GPU batch"
                    .into(),
            ));
        }
        if sessions.iter().any(|s| s.policy().renumbers()) {
            return Err(EngineError::Batch(
                "a cache that numbers tokens by their place in it turns its keys back as tokens leave: it decodes alone, not in a GPU batch"
                    .into(),
            ));
        }
        let rows = gpu.scratch.rows;
        if sessions.len() > rows {
            let n = sessions.len();
            return Err(EngineError::Batch(format!(
                "{n} sequences, but the model's buffers hold {rows} rows"
            )));
        }
        let logits = Logits::new(&gpu, sessions.len())?;
        let logits_buffer = logits.buffer.clone();
        let caches: Vec<_> = sessions.iter().map(|s| s.caches()).collect();
        let specs = plan::batch(&gpu.layout(), sessions.len());
        let runner = Runner::new(gpu.clone(), specs.len(), logits);
        let s = SessionBuffers {
            caches: &caches,
            logits: &logits_buffer,
            mass: None,
            renumbered: None,
        };
        let ops = ops::bind_all(&gpu, &runner.params, 0, specs, &s);
        Ok(GpuBatch { gpu, runner, ops, n_seqs: sessions.len() })
    }

    /// Advances every session given a token (`tokens[i]` for `sessions[i]`,
    /// the sessions the batch was built over; `None`: it sits this step out)
    /// by one position. Returns the `(active, vocab_size)` logits in session
    /// order and the step's cost.
    pub async fn decode(
        &self,
        sessions: &mut [&mut GpuSession],
        tokens: &[Option<u32>],
    ) -> Result<(Vec<f32>, StepStats)> {
        let start = web_time::Instant::now();
        if sessions.len() != self.n_seqs || tokens.len() != self.n_seqs {
            let (t, s) = (tokens.len(), self.n_seqs);
            return Err(EngineError::Batch(format!("{t} tokens for {s} sequences")));
        }
        for (s, t) in sessions.iter().zip(tokens) {
            if let Some(t) = t {
                check_input(&self.gpu.model, s.pos(), &[*t])?;
            }
        }
        let mut ids = Vec::new(); // (active) the tokens, row by row
        let mut seats = Vec::with_capacity(self.n_seqs);
        for (s, t) in sessions.iter_mut().zip(tokens) {
            seats.push(match t {
                Some(t) => {
                    ids.push(*t);
                    let place = s.take_slot();
                    Some(Seat { row: ids.len() as u32 - 1, place })
                }
                None => None,
            });
        }
        if ids.is_empty() {
            return Err(EngineError::NoTokens);
        }
        let active = ids.len() as u32;
        let place = Place::at(0); // each sequence's own ops read their seat's
        let pass = Pass { n_rows: active, place, lm_row0: 0, lm_rows: active, seats: &seats };
        let mut stats = StepStats { tokens: ids.len(), ..StepStats::default() };
        let ctx = &self.gpu.ctx;
        ctx.queue.write_buffer(&self.gpu.scratch.tokens, 0, bytemuck::cast_slice(&ids));
        stats.bytes_written += ids.len() * 4;
        let logits = self.runner.run(&self.ops, 0, &pass, &mut stats, None).await?;
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        for (s, _) in sessions.iter_mut().zip(tokens).filter(|(_, t)| t.is_some()) {
            s.took_step(stats);
        }
        Ok((logits, stats))
    }
}

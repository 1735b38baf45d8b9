//! A GPU session's forward pass: tokens through the model, into the cache
//! slots the session's policy gives them (`slots.rs`), one pass per piece
//! that fits the budget (one token at a time past it); and a decode step that
//! reads back only its greedy token.

use super::plan::{Pass, Place};
use super::probe::Probe;
use super::session::GpuSession;
use super::slots::MASS_ROWS;
use crate::error::{EngineError, Result};
use crate::step::{check_input, StepStats, Wanted};

impl GpuSession {
    /// `tokens` through the model: in passes of at most the scratch's rows
    /// ([`super::model::PASS_ROWS`]; [`MASS_ROWS`] for a heavy-hitter
    /// session) when they fit the budget, else one at a time, each query
    /// seeing what was kept at its turn.
    pub(super) async fn forward(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        decode: bool,
    ) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        check_input(&self.model().model, self.pos, tokens)?;
        let mut stats = StepStats { tokens: tokens.len(), ..StepStats::default() };
        let pass_rows = self.gpu.scratch.rows;
        let max_rows = if self.totals.is_some() { MASS_ROWS.min(pass_rows) } else { pass_rows };
        let mut logits = Vec::new();
        let mut done = 0;
        while done < tokens.len() {
            let left = tokens.len() - done;
            let rows = if self.slots.fits(left) { left.min(max_rows) } else { 1 };
            let place = self.take_room(rows, &mut stats).await?;
            let piece = &tokens[done..done + rows];
            let part = self.pass(piece, wanted, decode, place, None, &mut stats).await?;
            match wanted {
                Wanted::All => logits.extend(part),
                Wanted::Last => logits = part,
            }
            done += rows;
        }
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        self.last = stats;
        Ok(logits)
    }

    /// One token through the cached context, reading back only its greedy
    /// token (the argmax of its logits, found on the device).
    pub(super) async fn forward_greedy(&mut self, token: u32) -> Result<u32> {
        let start = web_time::Instant::now();
        check_input(&self.model().model, self.pos, &[token])?;
        let mut stats = StepStats { tokens: 1, ..StepStats::default() };
        let place = self.take_room(1, &mut stats).await?;
        let next = self.pass_greedy(token, place, &mut stats).await?;
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        self.last = stats;
        Ok(next)
    }

    /// A prefill in one pass, copied out by `probe`: the views that look
    /// inside read the whole cache, so it must fit.
    pub(super) async fn forward_probed(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        probe: &Probe,
    ) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        check_input(&self.model().model, self.pos, tokens)?;
        let max_rows = if self.totals.is_some() { MASS_ROWS } else { usize::MAX };
        if !self.slots.fits(tokens.len()) || tokens.len() > max_rows {
            return Err(EngineError::Setting(
                "the views that look inside the model read the full cache: use --kv-policy full"
                    .into(),
            ));
        }
        let pass_rows = self.gpu.scratch.rows;
        if tokens.len() > pass_rows {
            return Err(EngineError::Setting(format!(
                "the views that look inside the model read one pass, at most {pass_rows} tokens on the GPU; this prompt has {}",
                tokens.len()
            )));
        }
        let mut stats = StepStats { tokens: tokens.len(), ..StepStats::default() };
        let place = self.take_room(tokens.len(), &mut stats).await?;
        let logits = self.pass(tokens, wanted, false, place, Some(probe), &mut stats).await?;
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        self.last = stats;
        Ok(logits)
    }

    /// One decode pass of `token` into the slot `place` says, reading back
    /// its greedy token only.
    pub(super) async fn pass_greedy(
        &mut self,
        token: u32,
        place: Place,
        stats: &mut StepStats,
    ) -> Result<u32> {
        let pass = Pass::single(1, place, 0, 1);
        let ctx = &self.gpu.ctx;
        ctx.queue.write_buffer(&self.gpu.scratch.tokens, 0, bytemuck::bytes_of(&token));
        stats.bytes_written += 4;
        let next = self.runner.run_greedy(&self.ops.decode, 0, &pass, stats).await?;
        self.pos += 1;
        Ok(next)
    }

    /// One pass of `tokens` whose K/V go to the slots `place` says
    /// (`slots.rs` chooses them), adding to `stats`.
    pub(super) async fn pass(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        decode: bool,
        place: Place,
        probe: Option<&Probe>,
        stats: &mut StepStats,
    ) -> Result<Vec<f32>> {
        let n = tokens.len();
        let (lm_row0, total_rows) = match wanted {
            Wanted::Last => (n - 1, 1),
            Wanted::All => (0, n),
        };
        let first_rows = total_rows.min(self.runner.logits.rows);
        let pass = Pass::single(n as u32, place, lm_row0 as u32, first_rows as u32);
        let ops = if decode { &self.ops.decode } else { self.ops.rows(n) };
        let ctx = &self.gpu.ctx;
        ctx.queue.write_buffer(&self.gpu.scratch.tokens, 0, bytemuck::cast_slice(tokens));
        stats.bytes_written += n * 4;
        let probe = probe.map(|p| (p, &self.ops.residual_ends[..]));
        let mut logits = self.runner.run(ops, 0, &pass, stats, probe).await?;
        // Rows beyond the logits buffer: the LM head alone, chunk by chunk.
        while logits.len() < total_rows * self.config().vocab_size {
            let done = logits.len() / self.config().vocab_size;
            let rows = (total_rows - done).min(self.runner.logits.rows);
            let chunk = Pass { lm_row0: (lm_row0 + done) as u32, lm_rows: rows as u32, ..pass };
            let slot = self.ops.prefill.len();
            let head = &self.ops.lm_head;
            logits.extend(self.runner.run(head, slot, &chunk, stats, None).await?);
        }
        self.pos += n;
        Ok(logits)
    }
}

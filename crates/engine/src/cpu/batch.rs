//! A batched decode step on the CPU engine: one token for each of several
//! sessions of one model, in one forward pass. The linear layers run over
//! every row at once (the matmul twin streams each weight row once for up to
//! 16 rows), so the weights are read once per step, not once per sequence;
//! the K/V write and attention use each session's own cache and position.

use std::sync::Arc;

use super::forward::{self, Seen, Seq};
use super::slots::Taken;
use super::CpuSession;
use crate::error::{EngineError, Result};
use crate::step::{check_input, StepStats, Wanted};

impl CpuSession {
    /// Advances every session given a token (`tokens[i]` for `sessions[i]`;
    /// `None`: it sits this step out) by one position, in one pass. Returns
    /// the `(active, vocab_size)` logits in session order, and the step's cost.
    pub fn decode_batch(
        sessions: &mut [&mut CpuSession],
        tokens: &[Option<u32>],
    ) -> Result<(Vec<f32>, StepStats)> {
        let start = web_time::Instant::now();
        let model = check_batch(sessions, tokens)?;
        let (mut seqs, mut ids) = (Vec::new(), Vec::new());
        for (s, t) in sessions.iter_mut().zip(tokens) {
            if let Some(t) = t {
                ids.push(*t);
                let Taken { room, turn0 } = s.take_room(1);
                let ranks = s.slots.policy().ranks_by_mass();
                seqs.push(Seq {
                    key_cache: &mut s.key_cache,
                    value_cache: &mut s.value_cache,
                    pos0: s.pos,
                    slot0: room.slot0,
                    keys0: room.keys0,
                    turn0,
                    rows: 1,
                    mass: ranks.then_some(&mut s.mass),
                });
            }
        }
        let logits = forward::run(&model, &mut seqs, &ids, Wanted::All, &mut Seen::default());
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        let stats = StepStats { tokens: ids.len(), wall_ms, ..StepStats::default() };
        for (s, _) in sessions.iter_mut().zip(tokens).filter(|(_, t)| t.is_some()) {
            s.pos += 1;
            s.last = stats;
        }
        Ok((logits, stats))
    }
}

/// The checks before a batched step: one token slot per session, at least
/// one token, one model, every token valid and with room in its context.
fn check_batch(sessions: &[&mut CpuSession], tokens: &[Option<u32>]) -> Result<crate::SharedModel> {
    let Some(first) = sessions.first() else {
        return Err(EngineError::Batch("a batch needs at least one sequence".into()));
    };
    if tokens.len() != sessions.len() {
        let (t, s) = (tokens.len(), sessions.len());
        return Err(EngineError::Batch(format!("{t} tokens for {s} sequences")));
    }
    if tokens.iter().all(Option::is_none) {
        return Err(EngineError::NoTokens);
    }
    if sessions.iter().any(|s| !Arc::ptr_eq(&s.model, &first.model)) {
        return Err(EngineError::Batch("the sequences run different models".into()));
    }
    for (s, t) in sessions.iter().zip(tokens) {
        if let Some(t) = t {
            check_input(&s.model, s.pos, &[*t])?;
        }
    }
    Ok(first.model.clone())
}

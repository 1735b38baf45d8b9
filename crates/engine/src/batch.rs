//! Batched decode: several sequences of one model, each with its own KV cache
//! and position, advanced one token each in one step. Decode reads every
//! weight once per step whatever the batch, so B sequences cost far less
//! than B steps: the course's "batching is the performance lever", as an
//! engine feature. Sequences that are done sit a step out (`None`).

use crate::error::{EngineError, Result};
#[cfg(feature = "gpu")]
use crate::gpu::GpuBatch;
use crate::remote::RemoteSession;
use crate::session::Session;
use crate::step::{StepStats, Wanted};

/// Sessions advanced together.
pub struct Batch {
    sessions: Vec<Session>,
    /// The GPU engine's op list over the sessions' caches (built once).
    #[cfg(feature = "gpu")]
    gpu: Option<Box<GpuBatch>>,
    last: StepStats,
}

impl Batch {
    /// A batch over `sessions`: all of one model on one engine, at any positions.
    pub fn new(sessions: Vec<Session>) -> Result<Batch> {
        #[cfg(feature = "gpu")]
        let gpu = {
            let gpu: Vec<_> = sessions
                .iter()
                .filter_map(|s| match s {
                    Session::Gpu(g) => Some(g),
                    _ => None,
                })
                .collect();
            match gpu.len() {
                0 => None,
                n if n == sessions.len() => Some(Box::new(GpuBatch::new(&gpu)?)),
                _ => {
                    return Err(EngineError::Batch("the sequences run on different engines".into()))
                }
            }
        };
        if sessions.is_empty() {
            return Err(EngineError::Batch("a batch needs at least one sequence".into()));
        }
        let remote = sessions.iter().filter(|s| matches!(s, Session::Remote(_))).count();
        if remote != 0 && remote != sessions.len() {
            return Err(EngineError::Batch("the sequences run on different engines".into()));
        }
        Ok(Batch {
            sessions,
            #[cfg(feature = "gpu")]
            gpu,
            last: StepStats::default(),
        })
    }

    /// Sequences in the batch.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Never: a batch has at least one sequence.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The sessions, in order (positions, KV bytes).
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    /// The sessions back, where each batched step left them.
    pub fn into_sessions(self) -> Vec<Session> {
        self.sessions
    }

    /// Cost of the last batched step.
    pub fn last_stats(&self) -> StepStats {
        self.last
    }

    /// One step: every sequence given a token (`tokens[i]` for sequence `i`;
    /// `None`: it sits this step out) goes one position on. Returns the
    /// `(active, vocab_size)` logits of the active sequences, in order.
    pub async fn decode(&mut self, tokens: &[Option<u32>]) -> Result<Vec<f32>> {
        #[cfg(feature = "gpu")]
        if let Some(gpu) = &self.gpu {
            let mut sessions: Vec<_> =
                self.sessions.iter_mut().filter_map(Session::as_gpu).collect();
            let (logits, stats) = gpu.decode(&mut sessions, tokens).await?;
            self.last = stats;
            return Ok(logits);
        }
        if let Some(Session::Remote(_)) = self.sessions.first() {
            let mut sessions: Vec<_> =
                self.sessions.iter_mut().filter_map(Session::as_remote).collect();
            let (logits, stats) = RemoteSession::decode_batch(&mut sessions, tokens).await?;
            self.last = stats;
            return Ok(logits);
        }
        let mut sessions: Vec<_> = self.sessions.iter_mut().filter_map(Session::as_cpu).collect();
        let (logits, stats) = crate::cpu::CpuSession::decode_batch(&mut sessions, tokens)?;
        self.last = stats;
        Ok(logits)
    }

    /// Sequence `i` alone: `tokens` in one pass from its position (a
    /// sequence whose context is full is cropped and re-prefilled this way).
    pub async fn prefill(&mut self, i: usize, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        self.sequence(i)?.prefill(tokens, wanted).await
    }

    /// Sequence `i` back to position `to`.
    pub fn rewind(&mut self, i: usize, to: usize) -> Result<()> {
        self.sequence(i)?.rewind(to)
    }

    /// Sequence `to` becomes a copy of sequence `from` (its KV cache rows and
    /// position, copied into `to`'s own cache): how beam search gives a
    /// second child of one beam its parent's prefix. Returns the bytes copied.
    pub fn copy_sequence(&mut self, from: usize, to: usize) -> Result<u64> {
        let n = self.sessions.len();
        if from >= n || to >= n {
            return Err(EngineError::Batch(format!(
                "no sequence {} in a batch of {n}",
                from.max(to)
            )));
        }
        if from == to {
            return Ok(0);
        }
        // Two elements of one Vec: split it between them.
        let (low, high) = self.sessions.split_at_mut(from.max(to));
        let (a, b) = (&mut low[from.min(to)], &mut high[0]);
        if from < to {
            b.copy_from(a)
        } else {
            a.copy_from(b)
        }
    }

    fn sequence(&mut self, i: usize) -> Result<&mut Session> {
        let n = self.sessions.len();
        self.sessions
            .get_mut(i)
            .ok_or_else(|| EngineError::Batch(format!("no sequence {i} in a batch of {n}")))
    }
}

//! Running the search: the prefill, then per step the choice
//! ([`select::candidates`]), the cache seating ([`select::slots`]) and one
//! batched decode of the live beams.

use super::{select, BeamCost, BeamSearch, BeamSettings, BeamStep, Fate, Hypothesis, Live};
use crate::batch::Batch;
use crate::beam::check_beam_settings;
use crate::error::{EngineError, Result};
use crate::session::Session;
use crate::step::Wanted;

impl BeamSearch {
    /// Prefills `prompt` once into the first of `width` cache slots.
    pub async fn start(
        mut session: Session,
        prompt: &[u32],
        settings: BeamSettings,
    ) -> Result<BeamSearch> {
        check_beam_settings(settings.width, settings.scoring.length_penalty)?;
        if prompt.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        session.rewind(0)?;
        // Empty slots for the other beams (nothing to copy at position 0).
        let others = (1..settings.width).map(|_| session.fork()).collect::<Result<Vec<_>>>()?;
        let logits = session.prefill(prompt, Wanted::Last).await?;
        let stats = session.last_stats();
        let n_positions = session.config().n_positions;
        let mut sessions = vec![session];
        sessions.extend(others);
        let cost = BeamCost {
            passes: 1,
            submits: stats.submits,
            wall_ms: stats.wall_ms,
            ..Default::default()
        };
        Ok(BeamSearch {
            max_steps: settings.max_new_tokens.min(n_positions - prompt.len()),
            prompt_len: prompt.len(),
            settings,
            batch: Batch::new(sessions)?,
            live: vec![Live { slot: 0, tokens: Vec::new(), cumulative: 0.0, node: None }],
            logits: vec![logits],
            steps: Vec::new(),
            hypotheses: Vec::new(),
            cost,
            done: false,
        })
    }

    /// One step: ranks the live beams' extensions, records them, seats the
    /// kept ones and, unless the search ends here, decodes them in one
    /// batched step. Returns whether the search goes on.
    pub async fn step(&mut self) -> Result<bool> {
        let start = web_time::Instant::now();
        let more = self.advance().await;
        self.cost.wall_ms += start.elapsed().as_secs_f64() * 1e3;
        more
    }

    async fn advance(&mut self) -> Result<bool> {
        if self.done || self.max_steps == 0 {
            self.finish();
            return Ok(false);
        }
        let step = self.steps.len();
        let width = self.settings.width;
        let cumulative: Vec<f64> = self.live.iter().map(|l| l.cumulative).collect();
        let rows: Vec<&[f32]> = self.logits.iter().map(Vec::as_slice).collect();
        let last = step + 1 == self.max_steps;
        let candidates = select::candidates(&cumulative, &rows, width, &self.settings.ends, last);
        let mut kept = Vec::new();
        let mut next = Vec::new();
        for (rank, c) in candidates.iter().enumerate() {
            // The parent's tokens and this one (built only for the candidates kept or finished).
            let tokens = || [self.live[c.parent].tokens.as_slice(), &[c.token]].concat();
            match c.fate {
                Fate::Finished => self.hypotheses.push(Hypothesis {
                    tokens: tokens(),
                    logprob: c.cumulative,
                    node: (step, rank),
                    ended: true,
                }),
                Fate::Kept { .. } => {
                    kept.push(rank);
                    next.push((c.parent, tokens(), c.cumulative, rank));
                }
                Fate::Pruned => {}
            }
        }
        let parent_slot: Vec<usize> = self.live.iter().map(|l| l.slot).collect();
        let parents: Vec<usize> = next.iter().map(|n| n.0).collect();
        let (seats, copies) = select::slots(&parent_slot, &parents, width);
        self.live = next
            .into_iter()
            .zip(&seats)
            .map(|((_, tokens, cumulative, rank), &slot)| Live {
                slot,
                tokens,
                cumulative,
                node: Some((step, rank)),
            })
            .collect();
        self.steps.push(BeamStep { candidates, kept, copies: 0, copy_bytes: 0 });
        if self.live.is_empty() || last || self.converged() {
            self.finish();
            return Ok(false);
        }
        self.seat(&copies)?;
        self.decode().await?;
        Ok(true)
    }

    /// Hugging Face's stopping rule (`early_stopping=False`): B hypotheses
    /// have finished and the best live beam, scored at its length now, no
    /// longer beats the worst of them.
    fn converged(&self) -> bool {
        let width = self.settings.width;
        let scoring = self.settings.scoring;
        let ranked = self.ranked(scoring);
        if ranked.len() < width {
            return false;
        }
        let worst = ranked[width - 1].1;
        let generated = self.steps.len();
        let best_live = self.live.iter().map(|l| l.cumulative).fold(f64::NEG_INFINITY, f64::max);
        worst >= scoring.score(best_live, generated, self.prompt_len)
    }

    /// Copies parents' caches into the slots of their later children, and
    /// counts them against forking every child.
    fn seat(&mut self, copies: &[(usize, usize)]) -> Result<()> {
        let mut bytes = 0;
        for &(from, to) in copies {
            bytes += self.batch.copy_sequence(from, to)?;
        }
        // Forking every child copies a cache as long as the parents' for each.
        let per_cache = self.live.first().map_or(0, |l| self.cache_bytes(l.slot));
        let step = self.steps.last_mut().expect("a step was just recorded");
        step.copies = copies.len();
        step.copy_bytes = bytes;
        self.cost.kv_copies += copies.len();
        self.cost.kv_bytes_copied += bytes;
        self.cost.fork_copies += self.live.len();
        self.cost.fork_bytes += per_cache * self.live.len() as u64;
        Ok(())
    }

    /// Bytes of keys and values the session in `slot` holds.
    fn cache_bytes(&self, slot: usize) -> u64 {
        let s = &self.batch.sessions()[slot];
        let c = s.config();
        (s.pos() * c.n_embd * 4 * 2 * c.n_layer) as u64
    }

    /// The live beams' new tokens in one batched step; their logits back.
    async fn decode(&mut self) -> Result<()> {
        let mut tokens = vec![None; self.settings.width];
        for l in &self.live {
            tokens[l.slot] = l.tokens.last().copied();
        }
        let rows = self.batch.decode(&tokens).await?;
        let stats = self.batch.last_stats();
        let vocab = rows.len() / self.live.len();
        // Rows come in slot order of the active slots.
        let mut order: Vec<usize> = (0..self.live.len()).collect();
        order.sort_by_key(|&b| self.live[b].slot);
        self.logits = vec![Vec::new(); self.live.len()];
        for (row, &b) in order.iter().enumerate() {
            self.logits[b] = rows[row * vocab..][..vocab].to_vec();
        }
        self.cost.passes += 1;
        self.cost.decoded += self.live.len();
        self.cost.submits += stats.submits;
        Ok(())
    }

    /// Ends the search: the live beams join the finished hypotheses.
    fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        for l in self.live.drain(..) {
            if let Some(node) = l.node {
                self.hypotheses.push(Hypothesis {
                    tokens: l.tokens,
                    logprob: l.cumulative,
                    node,
                    ended: false,
                });
            }
        }
        self.logits.clear();
    }
}

//! A CPU session under a cache policy (`kv_policy`): its cache is a set of
//! slots (`kv_slots`). A pass that fits the budget appends its rows; past it
//! a token takes the slot of the one the policy drops, so the cache never
//! holds more than the budget's rows — the bytes it holds are exactly the
//! kept tokens' — and attention reads only what was kept.

use super::forward::{Seen, Seq};
use super::{forward, CpuSession};
use crate::kv_policy::KvPolicy;
use crate::step::Wanted;

impl CpuSession {
    /// The policy this session's cache follows.
    pub fn policy(&self) -> KvPolicy {
        self.slots.policy()
    }

    /// The position of the token in each cache slot (slot order).
    pub fn held(&self) -> &[usize] {
        self.slots.held()
    }

    /// (held) the attention each slot has received, summed over layers,
    /// heads and queries (kept only when the policy ranks by it; else empty).
    pub fn mass(&self) -> &[f32] {
        &self.mass
    }

    /// Runs `tokens` past the budget one at a time, each query seeing what
    /// was kept at its turn; else in one pass.
    pub(super) fn run_within_budget(&mut self, tokens: &[u32], wanted: Wanted) -> Vec<f32> {
        if self.slots.fits(tokens.len()) {
            return self.run_probed(tokens, wanted, &mut Seen::default());
        }
        let mut all = Vec::new();
        for &t in tokens {
            let row = self.run_probed(&[t], Wanted::Last, &mut Seen::default());
            match wanted {
                Wanted::All => all.extend(row),
                Wanted::Last => all = row,
            }
        }
        all
    }

    /// The forward pass of `tokens` (one, unless they fit the budget) over
    /// this session's cache alone, in the slots the policy gives them; what
    /// `seen` asks for is appended to it.
    pub(super) fn run_probed(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        seen: &mut Seen,
    ) -> Vec<f32> {
        let rows = tokens.len();
        let pos0 = self.pos;
        let room = self.slots.take(pos0, rows, &self.mass);
        let ranks = self.slots.policy().ranks_by_mass();
        if ranks && room.reused {
            self.mass[room.slot0] = 0.0; // a newcomer's total starts again
        }
        let CpuSession { model, key_cache, value_cache, mass, .. } = self;
        let mass = ranks.then_some(mass);
        let (slot0, keys0) = (room.slot0, room.keys0);
        let seq = Seq { key_cache, value_cache, pos0, slot0, keys0, rows, mass };
        let logits = forward::run(model, &mut [seq], tokens, wanted, seen);
        self.pos += rows;
        logits
    }

    /// Forgets the tokens at positions `to..`: the slots left fill their
    /// holes from the end (`Slots::rewind`), and the cache drops the rest.
    pub(super) fn rewind_slots(&mut self, to: usize) {
        let moves = self.slots.rewind(to);
        let e = self.config().kv_dim();
        for cache in self.key_cache.iter_mut().chain(&mut self.value_cache) {
            for &(from, to) in &moves {
                cache.copy_within(from * e..(from + 1) * e, to * e);
            }
            cache.truncate(self.slots.held().len() * e);
        }
        if !self.mass.is_empty() {
            for &(from, to) in &moves {
                self.mass[to] = self.mass[from];
            }
            self.mass.truncate(self.slots.held().len());
        }
    }
}

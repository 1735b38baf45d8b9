//! A CPU session's forward pass: tokens through the model (`forward.rs`)
//! into the cache slots its policy gives them — all at once when they fit
//! the budget, else one at a time, each query seeing what was kept at its
//! turn.

use super::forward::{Seen, Seq};
use super::slots::Taken;
use super::{forward, CpuSession};
use crate::step::Wanted;

impl CpuSession {
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
        let Taken { room, turn0 } = self.take_room(rows);
        let ranks = self.slots.policy().ranks_by_mass();
        let CpuSession { model, key_cache, value_cache, mass, .. } = self;
        let mass = ranks.then_some(mass);
        let (slot0, keys0) = (room.slot0, room.keys0);
        let seq = Seq { key_cache, value_cache, pos0, slot0, keys0, turn0, rows, mass };
        let logits = forward::run(model, &mut [seq], tokens, wanted, seen);
        self.pos += rows;
        logits
    }
}

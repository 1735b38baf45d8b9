//! A CPU session's cache as slots under its policy (`kv_policy`, `kv_slots`):
//! which token each slot holds, the attention each has received, and a
//! rewind that fills the holes it leaves. A pass that fits the budget
//! appends its rows; past it a token takes the slot of the one the policy
//! drops (`pass.rs`), so the cache never holds more than the budget's rows.

use super::CpuSession;
use crate::kernels::{kv_renumber, rope};
use crate::kv_policy::KvPolicy;
use crate::kv_slots::Room;

/// Where a pass's rows go (`Room`) and the rotary position of its first row.
pub(super) struct Taken {
    pub room: Room,
    pub turn0: usize,
}

impl CpuSession {
    /// Takes the slots of the next `rows` tokens (`Slots::take`): a heavy
    /// hitter's newcomer starts its total again, and under a policy that
    /// numbers tokens by their place in the cache the keys after the token
    /// that left turn back one position (`kv_renumber`), and the rows turn
    /// by their places.
    pub(super) fn take_room(&mut self, rows: usize) -> Taken {
        let room = self.slots.take(self.pos, rows, &self.mass);
        if self.slots.policy().ranks_by_mass() && room.reused {
            self.mass[room.slot0] = 0.0; // a newcomer's total starts again
        }
        let renumbered = self.slots.renumbered(room);
        let c = &self.model.config;
        if let (false, Some(llama)) = (renumbered.is_empty(), c.llama()) {
            let one = rope::turns(&llama.rope.inv_freq(c.head_size), 1, 1);
            for keys in &mut self.key_cache {
                kv_renumber::run_cpu(keys, c.kv_dim(), c.head_size, &renumbered, &one);
            }
        }
        Taken { room, turn0: self.slots.turn0(self.pos, room.keys0) }
    }

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

//! A CPU session under a cache policy (`kv_policy`): before each pass the
//! policy says which held tokens stay beside the incoming ones (so a query
//! sees at most the budget, itself included), and the others' rows leave the
//! cache (the rows after them move up): the cache's length — the bytes it
//! holds — shrinks exactly and attention reads only what was kept.

use super::CpuSession;
use crate::kv_policy::KvPolicy;

impl CpuSession {
    /// The policy this session's cache follows.
    pub fn policy(&self) -> KvPolicy {
        self.policy
    }

    /// The position of the token in each cache slot, ascending.
    pub fn held(&self) -> &[usize] {
        &self.held
    }

    /// `n` tokens went in at `pos..`: they are held.
    pub(super) fn took(&mut self, n: usize) {
        self.held.extend(self.pos..self.pos + n);
        self.pos += n;
    }

    /// Drops the rows of the held tokens the policy does not keep once `n`
    /// more come in at `pos..`.
    pub(super) fn make_room(&mut self, n: usize) {
        if self.policy.budget().is_none_or(|b| self.held.len() + n <= b) {
            return;
        }
        let mut all = self.held.clone();
        all.extend(self.pos..self.pos + n);
        let mut mass = self.mass.clone();
        mass.resize(all.len(), 0.0);
        let kept = self.policy.keep(&all, &mass);
        let e = self.config().n_embd;
        // Slots of the kept held tokens, ascending, so each row moves up or stays.
        let slots: Vec<usize> =
            kept.iter().filter_map(|p| self.held.binary_search(p).ok()).collect();
        for cache in self.key_cache.iter_mut().chain(&mut self.value_cache) {
            for (to, &from) in slots.iter().enumerate() {
                if to != from {
                    cache.copy_within(from * e..(from + 1) * e, to * e);
                }
            }
            cache.truncate(slots.len() * e);
        }
        self.held = slots.iter().map(|&s| self.held[s]).collect();
        if !self.mass.is_empty() {
            self.mass = slots.iter().map(|&s| self.mass[s]).collect();
        }
    }
}

//! A KV cache under a policy is a set of slots, each holding one token's K/V
//! and its position (issue 34). This is the bookkeeping both engines share,
//! so they put every token in the same slot: which slot a pass writes, which
//! slots its queries read, which slot an evicted token frees.
//!
//! A pass of `rows` new tokens that fits the budget appends them after the
//! held slots. Past the budget tokens go in one at a time: the policy drops
//! one held token and the newcomer takes its slot. Attention reads every held
//! slot whatever its order, since a softmax over keys does not depend on the
//! order it reads them in and each K/V carries its position in itself (GPT-2
//! adds the position at the input). So the cache never moves rows while it
//! decodes; only a rewind fills the holes it leaves, from the end.

use crate::kv_policy::KvPolicy;

/// The slots of one sequence's cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Slots {
    policy: KvPolicy,
    held: Vec<usize>, // (held) the position of the token in each slot
}

/// Where a pass's rows go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// The slot of the first row (its K/V are written at `slot0..slot0 + rows`).
    pub slot0: usize,
    /// Slots held before the first row: row r's query reads slots `0 ..= keys0 + r`.
    pub keys0: usize,
    /// Whether `slot0` was freed by an eviction (its attention mass starts again at 0).
    pub reused: bool,
    /// The position of the token that left, if one did.
    pub evicted: Option<usize>,
}

impl Slots {
    pub fn new(policy: KvPolicy) -> Slots {
        Slots { policy, held: Vec::new() }
    }

    pub fn policy(&self) -> KvPolicy {
        self.policy
    }

    /// The position of the token in each slot (slot order, not ascending once tokens left).
    pub fn held(&self) -> &[usize] {
        &self.held
    }

    /// Slots a cache of this policy ever holds for a model of `n_positions`:
    /// what it allocates.
    pub fn capacity(&self, n_positions: usize) -> usize {
        self.policy.budget().map_or(n_positions, |b| b.min(n_positions))
    }

    /// Whether `rows` new tokens fit beside the held ones (else they go in one at a time).
    pub fn fits(&self, rows: usize) -> bool {
        self.policy.budget().is_none_or(|b| self.held.len() + rows <= b)
    }

    /// Makes room for `rows` tokens at positions `pos..` (`rows` is 1 unless
    /// they [fit](Self::fits)) and holds them. `mass[s]` is the attention
    /// slot `s` has received (read only by a policy that ranks by it).
    pub fn take(&mut self, pos: usize, rows: usize, mass: &[f32]) -> Room {
        let n = self.held.len();
        if self.fits(rows) {
            self.held.extend(pos..pos + rows);
            return Room { slot0: n, keys0: n, reused: false, evicted: None };
        }
        assert_eq!(rows, 1, "past the budget tokens go in one at a time");
        // The policy reads positions ascending; `order` maps them back to slots.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&s| self.held[s]);
        let mut all: Vec<usize> = order.iter().map(|&s| self.held[s]).collect();
        all.push(pos);
        let mut ranked: Vec<f32> =
            order.iter().map(|&s| mass.get(s).copied().unwrap_or(0.0)).collect();
        ranked.push(0.0);
        let kept = self.policy.keep(&all, &ranked);
        // Full before this token, so exactly one held token leaves (the policy keeps the newest).
        let slot = order.iter().copied().find(|&s| kept.binary_search(&self.held[s]).is_err());
        let slot = slot.expect("a policy over its budget drops a held token");
        let evicted = Some(self.held[slot]);
        self.held[slot] = pos;
        Room { slot0: slot, keys0: n - 1, reused: true, evicted }
    }

    /// The slots whose keys turn back one position after `room` was taken:
    /// under a policy that numbers tokens by their place in the cache, every
    /// kept token after the one that left moves one place down (the
    /// newcomer, in `room.slot0`, comes in at its place already). Ascending
    /// slots; empty when nothing left or positions stay original.
    pub fn renumbered(&self, room: Room) -> Vec<usize> {
        let Some(gone) = room.evicted.filter(|_| self.policy.renumbers()) else {
            return Vec::new();
        };
        let later = |&s: &usize| s != room.slot0 && self.held[s] > gone;
        (0..self.held.len()).filter(later).collect()
    }

    /// The rotary position of a pass's first row at position `pos`, with
    /// `keys0` slots held before it: its place in the cache under a policy
    /// that [renumbers](KvPolicy::renumbers), else its position.
    pub fn turn0(&self, pos: usize, keys0: usize) -> usize {
        if self.policy.renumbers() {
            keys0
        } else {
            pos
        }
    }

    /// Forgets the tokens at positions `to..` (those evicted earlier stay
    /// gone). Returns the moves `(from, to)` of slots that fill the holes
    /// left below the new length, taken from the end: the engines copy those
    /// rows (and their mass), then drop every slot past the new length.
    pub fn rewind(&mut self, to: usize) -> Vec<(usize, usize)> {
        let len = self.held.iter().filter(|&&p| p < to).count();
        let holes = (0..len).filter(|&s| self.held[s] >= to);
        let movers = (len..self.held.len()).filter(|&s| self.held[s] < to);
        let moves: Vec<(usize, usize)> = movers.zip(holes).collect();
        for &(from, to) in &moves {
            self.held[to] = self.held[from];
        }
        self.held.truncate(len);
        moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(text: &str) -> Slots {
        Slots::new(KvPolicy::parse(text).unwrap())
    }

    #[test]
    fn a_window_reuses_the_slot_of_the_token_it_drops() {
        let mut s = slots("window:3");
        assert_eq!(s.take(0, 3, &[]), Room { slot0: 0, keys0: 0, reused: false, evicted: None });
        assert!(!s.fits(1));
        // Position 3 takes position 0's slot; every query still reads 3 slots.
        assert_eq!(s.take(3, 1, &[]), Room { slot0: 0, keys0: 2, reused: true, evicted: Some(0) });
        assert_eq!(s.take(4, 1, &[]), Room { slot0: 1, keys0: 2, reused: true, evicted: Some(1) });
        assert_eq!(s.held(), [3, 4, 2]);
        assert_eq!(s.capacity(1024), 3);
        assert_eq!(s.capacity(2), 2);
    }

    #[test]
    fn sinks_stay_and_heavy_hitters_follow_the_mass() {
        let mut s = slots("sinks:1,window:2");
        s.take(0, 3, &[]);
        assert_eq!(s.take(3, 1, &[]).slot0, 1); // position 1 leaves, 0 is a sink
        assert_eq!(s.take(4, 1, &[]).slot0, 2);
        assert_eq!(s.held(), [0, 3, 4]);
        let mut s = slots("heavy:1,recent:1");
        s.take(0, 2, &[]);
        // Slot 1 (position 1) has had more attention than slot 0: it stays.
        assert_eq!(s.take(2, 1, &[0.2, 0.7]).slot0, 0);
        assert_eq!(s.held(), [2, 1]);
        // Position 2 (slot 0) now leads in mass; the newest (3) is always kept.
        assert_eq!(s.take(3, 1, &[0.9, 0.1]).slot0, 1);
        assert_eq!(s.held(), [2, 3]);
    }

    #[test]
    fn renumbering_turns_back_the_keys_after_the_token_that_left() {
        let mut s = slots("sinks:1,window:3,positions:cache");
        s.take(0, 4, &[]);
        // Position 1 leaves slot 1 to position 4: positions 2 and 3 move one place down.
        let room = s.take(4, 1, &[]);
        assert_eq!((room.slot0, room.keys0, room.evicted), (1, 3, Some(1)));
        assert_eq!(s.renumbered(room), [2, 3]);
        let room = s.take(5, 1, &[]); // position 2 (slot 2) leaves
        assert_eq!(s.held(), [0, 4, 5, 3]);
        assert_eq!(s.renumbered(room), [1, 3]);
        // Original positions: nothing turns.
        let mut kept = slots("sinks:1,window:3");
        kept.take(0, 4, &[]);
        let room = kept.take(4, 1, &[]);
        assert_eq!(kept.renumbered(room), Vec::<usize>::new());
    }

    #[test]
    fn a_rewind_fills_holes_from_the_end() {
        let mut s = slots("window:4");
        s.take(0, 4, &[]);
        s.take(4, 1, &[]); // slot 0 ← 4
        s.take(5, 1, &[]); // slot 1 ← 5
        assert_eq!(s.held(), [4, 5, 2, 3]);
        // Back to position 5: slot 1 (position 5) leaves; slot 3 (position 3) fills it.
        assert_eq!(s.rewind(5), [(3, 1)]);
        assert_eq!(s.held(), [4, 3, 2]);
        assert_eq!(s.rewind(2), []);
        assert!(s.held().is_empty());
        let mut full = slots("full");
        full.take(0, 5, &[]);
        assert_eq!(full.rewind(3), []);
        assert_eq!(full.held(), [0, 1, 2]);
    }
}

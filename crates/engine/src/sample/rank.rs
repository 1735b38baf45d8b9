//! Ranking tokens without sorting the whole vocabulary. Cuts only need to know
//! *which* tokens lead, not their full order, so top-k is a selection and top-p
//! a selection driven by mass; both are O(vocab) expected. Full sorts happen
//! only over the few tokens a view asks for ([`top`]).
//!
//! The rank order is total: probability after temperature (descending), then
//! probability after the processors (descending; it separates tokens that a
//! tiny temperature rounded to the same value, and orders the tail at T = 0),
//! then lower id. Ties at any cut therefore go to the lower ids.

use std::cmp::Ordering;

/// The rank order over two distributions of the same vocabulary.
#[derive(Clone, Copy)]
pub(crate) struct Rank<'a> {
    /// (vocab_size) probabilities after temperature.
    pub tempered: &'a [f64],
    /// (vocab_size) probabilities after the processors, at T = 1.
    pub processed: &'a [f64],
}

impl Rank<'_> {
    /// `Less` when `a` ranks before (is more likely than) `b`.
    pub fn cmp(&self, a: u32, b: u32) -> Ordering {
        let (a, b) = (a as usize, b as usize);
        self.tempered[b]
            .total_cmp(&self.tempered[a])
            .then(self.processed[b].total_cmp(&self.processed[a]))
            .then(a.cmp(&b))
    }

    /// 1-based rank of `token` among every id.
    pub fn position(&self, token: u32) -> usize {
        1 + (0..self.tempered.len() as u32).filter(|&i| self.cmp(i, token).is_lt()).count()
    }

    /// The `n` leading ids of `ids`, moved to its front (unordered). O(len).
    pub fn select(&self, ids: &mut [u32], n: usize) {
        if n > 0 && n < ids.len() {
            ids.select_nth_unstable_by(n - 1, |&a, &b| self.cmp(a, b));
        }
    }

    /// How many leading ids of `ids` (in rank order) it takes for their mass
    /// under `probs` to reach `p`: the token that crosses `p` counts, and at
    /// least one is always taken. Reorders `ids` so those lead. Expected O(len):
    /// each round partitions around the median and keeps the half holding the
    /// crossing point.
    pub fn nucleus(&self, probs: &[f64], ids: &mut [u32], p: f64) -> usize {
        let (mut lo, mut hi) = (0, ids.len());
        let mut before = 0.0; // mass of ids[..lo], all ranked ahead of ids[lo..]
        while hi - lo > 64 {
            let mid = lo + (hi - lo) / 2;
            ids[lo..hi].select_nth_unstable_by(mid - lo, |&a, &b| self.cmp(a, b));
            let left: f64 = ids[lo..mid].iter().map(|&i| probs[i as usize]).sum();
            if before + left >= p {
                hi = mid;
            } else {
                before += left;
                lo = mid;
            }
        }
        ids[lo..hi].sort_unstable_by(|&a, &b| self.cmp(a, b));
        let mut cum = before;
        for (n, &i) in ids[lo..hi].iter().enumerate() {
            cum += probs[i as usize];
            if cum >= p {
                return lo + n + 1;
            }
        }
        hi.max(1)
    }
}

/// The `n` most likely ids in rank order (fewer if the vocabulary is smaller).
pub(crate) fn top(rank: Rank<'_>, n: usize) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..rank.tempered.len() as u32).collect();
    let n = n.min(ids.len());
    rank.select(&mut ids, n);
    ids.truncate(n);
    ids.sort_unstable_by(|&a, &b| rank.cmp(a, b));
    ids
}

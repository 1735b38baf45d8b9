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

/// A token id with its first sort key inline. Selections compare candidates
/// millions of times; reading the key from this array instead of looking it
/// up in two vocabulary-sized ones makes them several times faster.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    /// Bits of the tempered probability: for numbers ≥ 0 the bit patterns
    /// order like the numbers, and integers compare faster than floats.
    key: u64,
    pub id: u32,
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

    /// [`Rank::cmp`] for candidates; the arrays are read only on equal keys.
    fn cmp_candidates(&self, a: &Candidate, b: &Candidate) -> Ordering {
        b.key.cmp(&a.key).then_with(|| self.cmp(a.id, b.id))
    }

    /// Every id whose tempered probability is > 0 (there are `count`), in id order.
    pub fn alive(&self, count: usize) -> Vec<Candidate> {
        let mut alive = Vec::with_capacity(count);
        alive.extend(self.candidates().filter(|c| c.key > 0));
        alive
    }

    /// Every id, in id order.
    fn candidates(&self) -> impl Iterator<Item = Candidate> + '_ {
        let key = |(id, p): (usize, &f64)| Candidate { key: p.to_bits(), id: id as u32 };
        self.tempered.iter().enumerate().map(key)
    }

    /// 1-based rank of `token` among every id.
    pub fn position(&self, token: u32) -> usize {
        1 + (0..self.tempered.len() as u32).filter(|&i| self.cmp(i, token).is_lt()).count()
    }

    /// The `k` leading ids with tempered probability > 0 (unordered), in one
    /// pass and little memory: candidates collect in a buffer of a few times
    /// k; when it fills, it is cut down to the k leading ones, and their last
    /// key becomes a floor that most later tokens fail at a single comparison.
    /// Amortised O(vocab): each cut costs O(buffer) and follows at least
    /// buffer − k pushes. `k` must be below the number of such ids.
    pub fn top_k(&self, k: usize) -> Vec<Candidate> {
        let capacity = (2 * k).max(1024).min(self.tempered.len());
        let mut kept: Vec<Candidate> = Vec::with_capacity(capacity);
        // Keys below the floor cannot be among the k leading; keys equal to it
        // still can (the order's later keys break the tie), so they stay.
        let mut floor = 1; // the bits of the smallest positive number
        for c in self.candidates() {
            if c.key < floor {
                continue;
            }
            if kept.len() == capacity {
                self.select(&mut kept, k);
                kept.truncate(k);
                floor = kept.iter().map(|c| c.key).min().unwrap_or(floor);
                if c.key < floor {
                    continue;
                }
            }
            kept.push(c);
        }
        self.select(&mut kept, k);
        kept.truncate(k);
        kept
    }

    /// The `n` leading candidates, moved to the front (unordered). O(len).
    pub fn select(&self, candidates: &mut [Candidate], n: usize) {
        if n > 0 && n < candidates.len() {
            candidates.select_nth_unstable_by(n - 1, |a, b| self.cmp_candidates(a, b));
        }
    }

    /// How many leading candidates (in rank order) it takes for their mass
    /// under `probs` to reach `p`: the token that crosses `p` counts, and at
    /// least one is always taken. Reorders `candidates` so those lead.
    /// Expected O(len): each round partitions once around a pivot and keeps
    /// the side holding the crossing point, as quickselect does.
    pub fn nucleus(&self, probs: &[f64], candidates: &mut [Candidate], p: f64) -> usize {
        let mass = |c: &[Candidate]| c.iter().map(|c| probs[c.id as usize]).sum::<f64>();
        let (mut lo, mut hi) = (0, candidates.len());
        let mut before = 0.0; // mass of candidates[..lo], all ranked ahead of the rest
                              // Median-of-three pivots make quadratic inputs unlikely, not impossible:
                              // past this many rounds, fall back to exact medians (O(len log len)).
        let mut rounds_left = 2 * (usize::BITS - candidates.len().leading_zeros());
        while hi - lo > 64 {
            let split = match rounds_left.checked_sub(1) {
                Some(left) => {
                    rounds_left = left;
                    lo + self.partition(&mut candidates[lo..hi])
                }
                None => {
                    let mid = lo + (hi - lo) / 2;
                    self.select(&mut candidates[lo..hi], mid - lo + 1);
                    mid
                }
            };
            // candidates[lo..split] rank before candidates[split], which ranks
            // before everything after it.
            let left = mass(&candidates[lo..split]);
            let with_pivot = before + left + probs[candidates[split].id as usize];
            if before + left >= p {
                hi = split;
            } else if with_pivot >= p {
                return split + 1;
            } else {
                before = with_pivot;
                lo = split + 1;
            }
        }
        candidates[lo..hi].sort_unstable_by(|a, b| self.cmp_candidates(a, b));
        let mut cum = before;
        for (n, c) in candidates[lo..hi].iter().enumerate() {
            cum += probs[c.id as usize];
            if cum >= p {
                return lo + n + 1;
            }
        }
        hi.max(1)
    }

    /// Partitions around a median-of-three pivot; returns its final index:
    /// everything before it ranks before it, everything after ranks after.
    /// Branch-free Lomuto: a swap every step, the boundary moving on a
    /// comparison's outcome (a branch would mispredict half the time).
    fn partition(&self, c: &mut [Candidate]) -> usize {
        let last = c.len() - 1;
        let before = |a: &Candidate, b: &Candidate| self.cmp_candidates(a, b).is_lt();
        let (x, y, z) = (0, last / 2, last);
        let (lo, hi) = if before(&c[x], &c[y]) { (x, y) } else { (y, x) };
        let median = match (before(&c[z], &c[lo]), before(&c[z], &c[hi])) {
            (true, _) => lo,
            (false, true) => z,
            (false, false) => hi,
        };
        c.swap(median, last);
        let pivot = c[last];
        let mut store = 0;
        for i in 0..last {
            let lt = before(&c[i], &pivot);
            c.swap(i, store);
            store += usize::from(lt);
        }
        c.swap(store, last);
        store
    }
}

/// The `n` most likely ids in rank order (fewer if the vocabulary is smaller).
pub(crate) fn top(rank: Rank<'_>, n: usize) -> Vec<u32> {
    let mut candidates: Vec<Candidate> = rank.candidates().collect();
    let n = n.min(candidates.len());
    rank.select(&mut candidates, n);
    candidates.truncate(n);
    candidates.sort_unstable_by(|a, b| rank.cmp_candidates(a, b));
    candidates.iter().map(|c| c.id).collect()
}

//! One step's choice, pure arithmetic (no model): every live beam's best
//! extensions ranked together, the `2·B` best of them recorded, and what
//! becomes of each — the rule of Hugging Face's beam search (`num_beams = B`;
//! checked against `generate` by tests/beam_golden.rs): a candidate ending on
//! an end token finishes a hypothesis when it ranks in the first B, the best
//! B that do not end are the next beams (at the last step, only those in the
//! first B: the search ends with them), everything else is pruned. Then which cache slot each new beam
//! takes: its parent's when it is the parent's first child, another (a copy of
//! the parent's cache) otherwise.

use crate::sample::log_softmax;

/// What became of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It is live beam `beam` of the next step.
    Kept { beam: usize },
    /// It ended on an end token in the first B: a finished hypothesis.
    Finished,
    /// Outranked (or an end token past the first B).
    Pruned,
}

/// One extension of one beam, as the step ranked it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The beam it extends: its index among the previous step's kept beams
    /// (at the first step, 0: the prompt).
    pub parent: usize,
    pub token: u32,
    /// ln p(token | the parent's text).
    pub logprob: f64,
    /// The parent's cumulative log-probability plus `logprob`.
    pub cumulative: f64,
    pub fate: Fate,
}

/// The best extensions of the live beams, best first, with their fates, as
/// Hugging Face's beam search (`num_beams = width`) ranks them: a pool of
/// [`pool`]`(width, ends)` candidates, of which the first `2·width` — and
/// any kept further down — are returned for the history. `cumulative[b]`
/// and `logits[b]` (vocab_size) belong to live beam `b`; `ends` are the
/// tokens that end a hypothesis; `last`: the search stops after this step
/// (its length limit), so only the first `width` can be hypotheses.
pub fn candidates(
    cumulative: &[f64],
    logits: &[&[f32]],
    width: usize,
    ends: &[u32],
    last: bool,
) -> Vec<Candidate> {
    let keep = pool(width, ends.len());
    let mut all = Vec::with_capacity(keep * cumulative.len());
    for (parent, (&cum, row)) in cumulative.iter().zip(logits).enumerate() {
        let lp = log_softmax(row);
        for token in best_tokens(&lp, keep) {
            let logprob = lp[token];
            all.push(Candidate {
                parent,
                token: token as u32,
                logprob,
                cumulative: cum + logprob,
                fate: Fate::Pruned,
            });
        }
    }
    // Best first; ties in beam order, then token order (deterministic everywhere).
    all.sort_by(|a, b| {
        b.cumulative
            .total_cmp(&a.cumulative)
            .then(a.parent.cmp(&b.parent))
            .then(a.token.cmp(&b.token))
    });
    all.truncate(keep);
    let mut kept = 0;
    let mut shown = (2 * width).min(all.len());
    for (rank, c) in all.iter_mut().enumerate() {
        c.fate = if ends.contains(&c.token) {
            if rank < width {
                Fate::Finished
            } else {
                Fate::Pruned
            }
        } else if kept < width && (rank < width || !last) {
            kept += 1;
            shown = shown.max(rank + 1);
            Fate::Kept { beam: kept - 1 }
        } else {
            Fate::Pruned
        };
    }
    all.truncate(shown);
    all
}

/// Candidates a step ranks: Hugging Face's `max(2, 1 + n_ends) · width`, so
/// that `width` of them end on no end token however many do (with one end
/// token, `2·width`; with `ends_at=line`, every token holding a line break
/// ends a hypothesis, and the pool grows with them).
pub fn pool(width: usize, n_ends: usize) -> usize {
    (1 + n_ends).max(2) * width
}

/// The `n` most likely token ids, best first (ties: lower id first).
fn best_tokens(lp: &[f64], n: usize) -> Vec<usize> {
    let order = |a: &usize, b: &usize| lp[*b].total_cmp(&lp[*a]).then(a.cmp(b));
    let mut ids: Vec<usize> = (0..lp.len()).collect();
    if n < ids.len() {
        ids.select_nth_unstable_by(n, order);
        ids.truncate(n);
    }
    ids.sort_unstable_by(order);
    ids
}

/// Cache slots for the next beams. `parent_slot[p]`: the slot old beam `p`
/// sits in; `parents[k]`: new beam `k`'s parent. Returns each new beam's slot
/// and the `(from, to)` slot copies to make first. A parent's first child
/// keeps the parent's slot (its cache already holds the prefix); a later
/// child takes a slot whose beam left no child, and a copy of the parent's
/// cache. Copies never read a slot another copy writes.
pub fn slots(
    parent_slot: &[usize],
    parents: &[usize],
    width: usize,
) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut claimed = vec![false; width];
    let mut slot = vec![usize::MAX; parents.len()];
    for (k, &p) in parents.iter().enumerate() {
        let s = parent_slot[p];
        if !claimed[s] {
            claimed[s] = true;
            slot[k] = s;
        }
    }
    let mut free = (0..width).filter(|&s| !claimed[s]);
    let mut copies = Vec::new();
    for (k, &p) in parents.iter().enumerate() {
        if slot[k] == usize::MAX {
            let to = free.next().expect("at most `width` beams, so a slot is free");
            slot[k] = to;
            copies.push((parent_slot[p], to));
        }
    }
    (slot, copies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(probs: &[f32]) -> Vec<f32> {
        probs.iter().map(|p| p.ln()).collect()
    }

    #[test]
    fn the_best_extensions_of_all_beams_are_ranked_together() {
        // Beam 0 is sure of token 2; beam 1 (already less likely) splits.
        let a = row(&[0.05, 0.05, 0.8, 0.1]);
        let b = row(&[0.4, 0.4, 0.1, 0.1]);
        let c = candidates(&[0.0, -1.0], &[&a, &b], 2, &[], false);
        assert_eq!(c.len(), 4);
        let order: Vec<(usize, u32)> = c.iter().map(|c| (c.parent, c.token)).collect();
        // Beam 1's 0.4s (-1.92) outrank beam 0's second best (ln 0.1 = -2.30).
        assert_eq!(order, [(0, 2), (1, 0), (1, 1), (0, 3)]);
        assert_eq!(c[0].fate, Fate::Kept { beam: 0 });
        assert_eq!(c[1].fate, Fate::Kept { beam: 1 });
        assert_eq!(c[2].fate, Fate::Pruned);
        assert_eq!(c[3].fate, Fate::Pruned);
        assert!((c[1].cumulative - (-1.0 + 0.4f64.ln())).abs() < 1e-6);
        assert!((c[1].logprob - 0.4f64.ln()).abs() < 1e-6);
    }

    #[test]
    fn an_end_token_finishes_only_in_the_first_width_ranks() {
        let a = row(&[0.5, 0.3, 0.15, 0.05]);
        // Token 0 ends: rank 0 < 2, finished; the two best others are kept.
        let c = candidates(&[0.0], &[&a], 2, &[0], false);
        let fates: Vec<Fate> = c.iter().map(|c| c.fate).collect();
        assert_eq!(
            fates,
            [Fate::Finished, Fate::Kept { beam: 0 }, Fate::Kept { beam: 1 }, Fate::Pruned]
        );
        // Token 3 ends at rank 3 ≥ 2: pruned, not finished.
        let c = candidates(&[0.0], &[&a], 2, &[3], false);
        assert_eq!(c[3].fate, Fate::Pruned);
    }

    #[test]
    fn first_children_keep_their_parents_slot_and_later_ones_copy() {
        // Old beams 0, 1, 2 in slots 2, 0, 1; new beams' parents: 1, 1, 2.
        let (slot, copies) = slots(&[2, 0, 1], &[1, 1, 2], 3);
        assert_eq!(slot, [0, 2, 1]);
        assert_eq!(copies, [(0, 2)], "old beam 0 left no child: its slot 2 takes a copy");
        // Every child of one parent: one keeps the slot, the rest copy.
        let (slot, copies) = slots(&[0], &[0, 0, 0], 3);
        assert_eq!(slot, [0, 1, 2]);
        assert_eq!(copies, [(0, 1), (0, 2)]);
    }
}

//! BPE's merge loop, as `tokenizers` runs it: the adjacent pair with the
//! lowest rank merges first (leftmost on a tie), until no pair merges. A
//! priority queue over a linked list, so a long word costs n·log n: a
//! SentencePiece-style tokenizer has no pre-tokenizer, and a pasted page of
//! text is one word.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// (left id, right id) → (rank, merged id).
pub type Merges = HashMap<(u32, u32), (u32, u32)>;

/// `symbols` (ids, in order) merged in place.
pub fn merge(symbols: &mut Vec<u32>, merges: &Merges) {
    let n = symbols.len();
    if n < 2 {
        return;
    }
    const NONE: usize = usize::MAX;
    // [n] each: the neighbours of symbol i, NONE at the ends; merged-away
    // symbols are marked dead rather than moved.
    let mut prev: Vec<usize> = (0..n).map(|i| i.checked_sub(1).unwrap_or(NONE)).collect();
    let mut next: Vec<usize> = (1..=n).map(|i| if i < n { i } else { NONE }).collect();
    let mut alive = vec![true; n];
    // Candidates (rank, left position, merged id), smallest first. An entry
    // goes stale when a neighbour merges; it is checked again when popped.
    let mut queue = BinaryHeap::new();
    let candidate = |symbols: &[u32], i: usize, j: usize| {
        merges.get(&(symbols[i], symbols[j])).map(|&(rank, id)| Reverse((rank, i, id)))
    };
    queue.extend((0..n - 1).filter_map(|i| candidate(symbols, i, i + 1)));
    while let Some(Reverse((rank, i, id))) = queue.pop() {
        let j = next[i];
        let current =
            alive[i] && j != NONE && candidate(symbols, i, j) == Some(Reverse((rank, i, id)));
        if !current {
            continue;
        }
        symbols[i] = id;
        alive[j] = false;
        next[i] = next[j];
        if next[i] != NONE {
            prev[next[i]] = i;
            queue.extend(candidate(symbols, i, next[i]));
        }
        if prev[i] != NONE {
            queue.extend(candidate(symbols, prev[i], i));
        }
    }
    let mut at = 0;
    symbols.retain(|_| {
        at += 1;
        alive[at - 1]
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain loop: scan for the lowest (rank, position), merge, repeat.
    fn by_scanning(mut symbols: Vec<u32>, merges: &Merges) -> Vec<u32> {
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| merges.get(&(w[0], w[1])).map(|&(rank, id)| (rank, i, id)))
                .min();
            let Some((_, i, id)) = best else { return symbols };
            symbols[i] = id;
            symbols.remove(i + 1);
        }
    }

    #[test]
    fn the_queue_merges_as_the_plain_loop_does() {
        // Symbols 0..4; merges over them and their products, ranks shuffled,
        // runs of equal pairs ("a a a a") included.
        let mut merges = Merges::new();
        let mut seed = 7u32;
        for rank in 0..40 {
            let made = 4 + rank; // the merged symbol's id
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let (a, b) = ((seed >> 8) % made, (seed >> 20) % made);
            merges.entry((a, b)).or_insert((rank, made));
        }
        for len in [0, 1, 2, 3, 63, 65, 1757] {
            let word: Vec<u32> = (0..len).map(|i| ((i * 7 + i / 3) % 4) as u32).collect();
            let mut fast = word.clone();
            merge(&mut fast, &merges);
            assert_eq!(fast, by_scanning(word, &merges), "length {len}");
        }
    }
}

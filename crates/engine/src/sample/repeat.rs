//! Finding the repetition loop greedy decoding falls into: the longest tail of
//! a token sequence that repeats with one period. The greedy-loop widget
//! highlights it; nothing here changes what is generated.

/// A periodic tail: `tokens[start..]` repeats its first `period` tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loop {
    /// Where the repeating tail begins.
    pub start: usize,
    /// Length of the repeated span, in tokens.
    pub period: usize,
    /// How many times the span occurs (the last one may be partial).
    pub repeats: f64,
}

/// Tails shorter than this are not called a loop (two newlines are not one).
const MIN_TAIL: usize = 6;

/// The longest periodic tail covering at least two whole periods, if any;
/// among equally long tails the shortest period wins.
pub fn find_loop(tokens: &[u32]) -> Option<Loop> {
    let n = tokens.len();
    let mut best: Option<Loop> = None;
    for period in 1..=n / 2 {
        // How far back from the end tokens[i] == tokens[i + period] holds.
        let matching =
            (0..n - period).rev().take_while(|&i| tokens[i] == tokens[i + period]).count();
        let tail = matching + period;
        if tail < 2 * period || tail < MIN_TAIL {
            continue;
        }
        if best.is_none_or(|b| n - b.start < tail) {
            best = Some(Loop { start: n - tail, period, repeats: tail as f64 / period as f64 });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_repeated_span_at_the_end() {
        // 9 8 | 1 2 3 | 1 2 3 | 1 2
        let l = find_loop(&[9, 8, 1, 2, 3, 1, 2, 3, 1, 2]).unwrap();
        assert_eq!(l, Loop { start: 2, period: 3, repeats: 8.0 / 3.0 });
    }

    #[test]
    fn prefers_the_shortest_period_for_the_same_tail() {
        let l = find_loop(&[5, 7, 7, 7, 7, 7, 7, 7]).unwrap();
        assert_eq!((l.start, l.period), (1, 1));
    }

    #[test]
    fn no_loop_in_varied_or_short_text() {
        assert_eq!(find_loop(&[1, 2, 3, 4, 5, 6, 7, 8]), None);
        assert_eq!(find_loop(&[]), None);
        assert_eq!(find_loop(&[4, 4]), None, "shorter than MIN_TAIL");
        // One repeat but not two whole periods.
        assert_eq!(find_loop(&[1, 2, 3, 4, 5, 1, 2, 3]), None);
    }
}

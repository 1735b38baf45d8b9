//! Whether the CPU worker's coworker pays on this machine. Two threads read
//! half the weights each, but every shared product waits for the other
//! thread's half, and a machine whose second core is busy (the page's own
//! thread, other tabs) makes those waits cost more than the half saves. So
//! the first decode steps alternate with and without the coworker, timed,
//! and the faster way is kept: the numbers are the same either way, only
//! the time differs.

/// Decode steps timed each way before the choice.
pub const TRIALS: usize = 8;

/// Steps of each way run before the timed ones and not counted: a
/// worker's first products run code the browser has not optimised yet
/// (seen: the coworker's first two shared steps took 23–26 ms, its later
/// ones 12–17, against 15–16 alone), which would decide for one worker.
pub const WARM_UP: usize = 2;

/// The trial and, once made, the choice.
#[derive(Debug, Default, Clone)]
pub struct Pace {
    with: Vec<f64>,    // (≤ WARM_UP + TRIALS) ms per step with the coworker
    without: Vec<f64>, // (≤ WARM_UP + TRIALS) ms per step alone
    choice: Option<bool>,
}

impl Pace {
    /// Whether the next decode step runs with the coworker: alternating
    /// during the trial, then the choice.
    pub fn next_with(&self) -> bool {
        self.choice.unwrap_or(self.with.len() <= self.without.len())
    }

    /// A decode step ran `with` the coworker or not, in `ms`: the choice is
    /// made when both ways have [`TRIALS`] steps after their [`WARM_UP`], by
    /// the mean of each without its slowest step (so a step the machine
    /// delayed does not decide it). Not the median: steps with the coworker
    /// take one of two times, as the page's own work on the second core
    /// lands on them or not (seen: 12–13 or 17–18 ms, against a steady 16
    /// alone), and a median picks one of the two where the mean is the rate.
    pub fn record(&mut self, with: bool, ms: f64) {
        if self.choice.is_some() {
            return;
        }
        let times = if with { &mut self.with } else { &mut self.without };
        times.push(ms);
        let timed = |t: &[f64]| t.len() >= WARM_UP + TRIALS;
        if timed(&self.with) && timed(&self.without) {
            let rate = |t: &[f64]| mean_but_slowest(&t[WARM_UP..]);
            self.choice = Some(rate(&self.with) < rate(&self.without));
        }
    }

    /// The choice once made: with the coworker, or alone.
    pub fn choice(&self) -> Option<bool> {
        self.choice
    }
}

/// The mean of `xs` without its largest value.
fn mean_but_slowest(xs: &[f64]) -> f64 {
    let slowest = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (xs.iter().sum::<f64>() - slowest) / (xs.len() - 1).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `with_ms` / `without_ms` in the order the pace asks for them.
    fn trial(with_ms: &[f64], without_ms: &[f64]) -> Pace {
        let (mut a, mut b) = (with_ms.iter(), without_ms.iter());
        let mut pace = Pace::default();
        while pace.choice().is_none() {
            let with = pace.next_with();
            let ms = if with { a.next() } else { b.next() };
            pace.record(with, *ms.expect("enough trial times"));
        }
        pace
    }

    /// `times` after [`WARM_UP`] steps of `warm` ms.
    fn warmed(warm: f64, times: &[f64]) -> Vec<f64> {
        [vec![warm; WARM_UP], times.to_vec()].concat()
    }

    #[test]
    fn the_faster_way_is_kept_and_alternated_until_then() {
        // One slow outlier with the coworker does not decide it.
        let with = warmed(10.0, &[10.0, 10.0, 90.0, 10.0, 10.0, 10.0, 10.0, 10.0]);
        let fast_with = trial(&with, &warmed(15.0, &[15.0; TRIALS]));
        assert_eq!(fast_with.choice(), Some(true));
        assert!(fast_with.next_with());
        let without = warmed(15.0, &[15.0, 15.0, 15.0, 14.0, 15.0, 15.0, 15.0, 15.0]);
        let slow_with = trial(&warmed(18.0, &[18.0; TRIALS]), &without);
        assert_eq!(slow_with.choice(), Some(false));
        assert!(!slow_with.next_with());
        // Two times with the coworker, as the page's work lands on a step
        // or not: their mean, not the upper of the two, is weighed.
        let bimodal = warmed(13.0, &[13.0, 17.5, 13.0, 17.5, 17.5, 13.0, 13.0, 17.5]);
        let steady = warmed(16.0, &[16.0; TRIALS]);
        assert_eq!(trial(&bimodal, &steady).choice(), Some(true));
        // A tie keeps one thread (no waits for nothing).
        let tie = trial(&warmed(15.0, &[15.0; TRIALS]), &warmed(15.0, &[15.0; TRIALS]));
        assert_eq!(tie.choice(), Some(false));
        // Slow first steps (code not yet optimised) are not counted.
        let cold_with = trial(&warmed(26.0, &[12.0; TRIALS]), &warmed(15.0, &[15.0; TRIALS]));
        assert_eq!(cold_with.choice(), Some(true));
        // The trial alternates, starting with the coworker.
        let mut pace = Pace::default();
        let ways: Vec<bool> = (0..4)
            .map(|_| {
                let w = pace.next_with();
                pace.record(w, 1.0);
                w
            })
            .collect();
        assert_eq!(ways, [true, false, true, false]);
        // After the choice, recorded times change nothing.
        let mut kept = fast_with.clone();
        kept.record(false, 0.1);
        assert_eq!(kept.choice(), Some(true));
    }
}

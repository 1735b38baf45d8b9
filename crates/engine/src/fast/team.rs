//! A forward pass's threads, held for the whole pass (natively): the pass
//! runs on one of rayon's threads and every other thread of the pool spins
//! beside it until the pass ends, taking each kernel's parts as they come.
//! Between kernels rayon's idle threads yield 33 times and then sleep, and a
//! kernel's other part waited for a futex wake-up (or was run by the pass's
//! own thread after its own part, when the wake-up came late): two threads,
//! GPT-2-124M shape, int4 decode, about 30 context switches a step and the
//! pass's thread running 13 % more of the int4 matmuls than the other.
//! llama.cpp's threads spin the same way between a graph's nodes.
//!
//! The parts are the ones [`parallel::parts`](super::parallel::parts) cut,
//! each computed exactly as on its own, so the bits do not depend on which
//! thread took which part.

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a helper spins on the CPU (`spin_loop`) for the next kernel
/// before it only yields between looks: long enough for a decode step's
/// gaps between kernels (a norm, a residual add: a few microseconds), short
/// enough that a pass's long serial stretch does not hold a busy machine's core.
const SPIN: Duration = Duration::from_micros(50);

thread_local! {
    /// The team whose pass runs on this thread, if any.
    static LEADS: Cell<*const Team> = const { Cell::new(ptr::null()) };
    /// Whether this thread runs a team's part now or helps a team: parts
    /// shared out from there run in place (never publishing a second job
    /// over the first, or waiting on a pool whose threads a team holds).
    static IN_PART: Cell<bool> = const { Cell::new(false) };
}

/// One kernel's parts, shared out: `run(i)` runs part i.
struct Job<'a> {
    run: &'a (dyn Fn(usize) + Sync),
    next: AtomicUsize, // the next part nobody has claimed
    len: usize,
}

impl Job<'_> {
    /// Runs parts nobody has claimed until none is left.
    fn claim_all(&self) {
        loop {
            let i = self.next.fetch_add(1, SeqCst);
            if i >= self.len {
                return;
            }
            (self.run)(i);
        }
    }
}

/// A pass's threads: the pass's own (the leader) and its helpers.
pub struct Team {
    /// The kernel being shared out (null between kernels).
    job: AtomicPtr<Job<'static>>,
    /// Helpers inside `job` now: the leader withdraws a job and then waits
    /// for this to reach 0 before the job (on its stack) is gone.
    entered: AtomicUsize,
    /// Set when the pass ends: helpers go back to the pool.
    done: AtomicBool,
    /// A part's panic on a helper, for the leader to carry on.
    panicked: Mutex<Option<Box<dyn Any + Send>>>,
}

/// `f` run with the other threads of rayon's pool (natively, with more
/// than one) spinning beside it as helpers until it returns: called on one
/// of the pool's threads, by [`parallel::on_pool`](super::parallel::on_pool).
/// On a thread already leading or helping a team, `f` just runs.
pub fn lead<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if !LEADS.get().is_null() || IN_PART.get() {
        return f();
    }
    let team = Team {
        job: AtomicPtr::new(ptr::null_mut()),
        entered: AtomicUsize::new(0),
        done: AtomicBool::new(false),
        panicked: Mutex::new(None),
    };
    rayon::scope(|s| {
        for _ in 1..rayon::current_num_threads() {
            s.spawn(|_| team.help());
        }
        // Ends the pass even if `f` panics, so that the scope's helpers return.
        struct Leading<'a>(&'a Team);
        impl Drop for Leading<'_> {
            fn drop(&mut self) {
                LEADS.set(ptr::null());
                self.0.done.store(true, SeqCst);
            }
        }
        LEADS.set(&team);
        let _leading = Leading(&team);
        f()
    })
}

/// `f` of each part, in order, shared out among this thread's team if it
/// leads one; run in place if it helps one; `None` elsewhere (the caller
/// uses rayon's pool).
pub fn map<T: Send>(
    parts: &[std::ops::Range<usize>],
    f: &(impl Fn(std::ops::Range<usize>) -> T + Sync),
) -> Option<Vec<T>> {
    if IN_PART.get() || parts.len() == 1 {
        return Some(parts.iter().cloned().map(f).collect());
    }
    let team = LEADS.get();
    if team.is_null() {
        return None;
    }
    // SAFETY: `lead` set it for the pass it runs on this thread, and clears
    // it before the team is gone.
    let team = unsafe { &*team };
    Some(team.map(parts, f))
}

impl Team {
    /// The leader's side of [`map`]: publishes the kernel, runs parts until
    /// none is left, withdraws it and waits for the helpers inside it.
    fn map<T: Send>(
        &self,
        parts: &[std::ops::Range<usize>],
        f: &(impl Fn(std::ops::Range<usize>) -> T + Sync),
    ) -> Vec<T> {
        let outs: Vec<Mutex<Option<T>>> = parts.iter().map(|_| Mutex::new(None)).collect();
        let run = |i: usize| {
            let out = f(parts[i].clone());
            *outs[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
        };
        let job = Job { run: &run, next: AtomicUsize::new(0), len: parts.len() };
        {
            let _published = Published::new(self, &job);
            IN_PART.set(true);
            let _in_part = InPart;
            job.claim_all();
        }
        if let Some(payload) = self.panicked.lock().unwrap_or_else(PoisonError::into_inner).take() {
            panic::resume_unwind(payload);
        }
        let out = |o: Mutex<Option<T>>| o.into_inner().unwrap_or_else(PoisonError::into_inner);
        // Every part ran: the leader claimed until none was left, and each
        // part a helper claimed finished (or panicked, carried on above)
        // before `entered` fell to 0.
        outs.into_iter().map(|o| out(o).expect("a claimed part ran")).collect()
    }

    /// A helper's loop: the parts of each kernel the leader publishes, until
    /// the pass ends.
    fn help(&self) {
        IN_PART.set(true);
        let mut idle = Instant::now();
        while !self.done.load(SeqCst) {
            let job = self.job.load(SeqCst);
            if job.is_null() {
                pause(idle);
                continue;
            }
            self.entered.fetch_add(1, SeqCst);
            // Looked at again after entering: the leader withdraws a job
            // before it reads `entered`, so a job still published here
            // lives until this helper leaves (SeqCst orders the four).
            if self.job.load(SeqCst) == job {
                // SAFETY: as above, the job outlives this helper's stay.
                let job = unsafe { &*job };
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| job.claim_all())) {
                    *self.panicked.lock().unwrap_or_else(PoisonError::into_inner) = Some(payload);
                    job.next.fetch_max(job.len, SeqCst); // the rest unclaimed: the leader carries the panic
                }
                idle = Instant::now();
            }
            self.entered.fetch_sub(1, SeqCst);
        }
        IN_PART.set(false);
    }
}

/// Clears [`IN_PART`] when the leader's claims end (or its part panics).
struct InPart;

impl Drop for InPart {
    fn drop(&mut self) {
        IN_PART.set(false);
    }
}

/// A wait's turn since `since`: the CPU's pause for [`SPIN`], then a yield
/// to whatever else the OS has to run (a helper the OS took off its core
/// holding a part the leader waits for, on a machine with more threads than
/// cores).
fn pause(since: Instant) {
    if since.elapsed() < SPIN {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A job published to the team while it lives: dropped (after the leader's
/// claims, or as the leader's own part panics), it claims what is left,
/// withdraws the job and waits until no helper is inside it.
struct Published<'a>(&'a Team, &'a Job<'a>);

impl<'a> Published<'a> {
    fn new(team: &'a Team, job: &'a Job<'a>) -> Self {
        let erased = ptr::from_ref(job).cast::<Job<'static>>().cast_mut();
        team.job.store(erased, SeqCst);
        Published(team, job)
    }
}

impl Drop for Published<'_> {
    fn drop(&mut self) {
        let Published(team, job) = *self;
        job.next.fetch_max(job.len, SeqCst);
        team.job.store(ptr::null_mut(), SeqCst);
        let waiting = Instant::now();
        while team.entered.load(SeqCst) != 0 {
            pause(waiting);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{lead, map};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::time::{Duration, Instant};

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool")
    }

    /// Each part waits (up to a second) until every part has started: true
    /// only if the parts ran at once, on as many threads.
    fn all_at_once(started: &AtomicUsize, parts: usize) -> bool {
        started.fetch_add(1, SeqCst);
        let t = Instant::now();
        while started.load(SeqCst) < parts && t.elapsed() < Duration::from_secs(1) {
            std::hint::spin_loop();
        }
        started.load(SeqCst) >= parts
    }

    /// A led pass's kernels are shared among all the pool's threads at once,
    /// kernel after kernel, and each kernel's outputs come back in part order.
    #[test]
    fn helpers_take_parts_kernel_after_kernel() {
        let parts = [0..3, 3..5, 5..9];
        let (kernels, at_once) = pool(3).install(|| {
            lead(|| {
                let mut kernels = Vec::new();
                let mut at_once = 0;
                for k in 0..20 {
                    let started = AtomicUsize::new(0);
                    let out = map(&parts, &|r| {
                        (r.clone().map(|i| i * k).sum::<usize>(), all_at_once(&started, 3))
                    })
                    .expect("led");
                    at_once += out.iter().all(|o| o.1) as usize;
                    kernels.push(out.into_iter().map(|o| o.0).collect::<Vec<_>>());
                }
                (kernels, at_once)
            })
        });
        for (k, sums) in kernels.iter().enumerate() {
            assert_eq!(sums, &[3 * k, 7 * k, 26 * k], "kernel {k}");
        }
        assert_eq!(at_once, 20, "kernels whose three parts ran on three threads at once");
    }

    /// A part's panic, on whichever thread, comes out of the pass, and the
    /// pool runs the next pass.
    #[test]
    fn a_part_that_panics_ends_the_pass_not_the_pool() {
        let pool = pool(2);
        for bad in 0..2 {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| {
                    lead(|| {
                        let started = AtomicUsize::new(0);
                        map(&[0..1, 1..2], &|r| {
                            all_at_once(&started, 2);
                            assert_ne!(r.start, bad, "part {bad} fails");
                            r.start
                        })
                    })
                })
            }));
            assert!(caught.is_err(), "part {bad}'s panic came out");
        }
        let next = pool.install(|| lead(|| map(&[0..2, 2..4], &|r| r.len())));
        assert_eq!(next, Some(vec![2, 2]));
    }

    /// A part that shares out parts of its own runs them in place on a
    /// helper (never waiting on the pool its team holds); outside a pass
    /// `map` leaves the parts to rayon.
    #[test]
    fn nested_parts_run_in_place() {
        let outer = [0..2, 2..4];
        let sums = pool(2).install(|| {
            lead(|| {
                map(&outer, &|r| {
                    let inner = [r.start..r.start + 1, r.start + 1..r.end];
                    map(&inner, &|i| i.start * 10).expect("in place").iter().sum::<usize>()
                })
            })
        });
        assert_eq!(sums, Some(vec![10, 50]));
        assert!(map(&outer, &|r| r.len()).is_none(), "no team on the test's thread");
    }
}

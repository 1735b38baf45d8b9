//! How the CPU twins use the machine: natively they share one kernel's
//! outputs among threads over rayon's pool (one thread per core) and run
//! their loops in AVX-512's sixteen lanes or AVX2's eight where the CPU has them; in wasm, one
//! thread and SIMD128's four lanes. Each output is still computed by exactly
//! the arithmetic of an unsplit run, and AVX2's adds and multiplies are the
//! same IEEE operations as SIMD128's (no fused multiply-add, which would
//! round differently), so the numbers depend on neither.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Set by [`without_avx2`]: the portable loops even where AVX2 is there.
static PORTABLE: AtomicBool = AtomicBool::new(false);

/// Set by [`without_avx512`]: at most the AVX2 copies.
static NO_AVX512: AtomicBool = AtomicBool::new(false);

/// Set by [`without_amx`]: a prefill's integer sums in vectors, not tiles.
static NO_AMX: AtomicBool = AtomicBool::new(false);

/// Set by [`with_wide_panels`] (`WIDE`) or [`with_narrow_panels`]
/// (`NARROW`): the column panels' AVX-512 copy on any core, or on none.
static PANELS: AtomicU8 = AtomicU8::new(BY_VENDOR);
const BY_VENDOR: u8 = 0;
const WIDE: u8 = 1;
const NARROW: u8 = 2;

/// Whether the CPU twins run their AVX2 copies.
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && !PORTABLE.load(Ordering::Relaxed)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU twins run their AVX-512 copies (sixteen lanes; byte and
/// word lanes too, which the int8 and int4 loops widen through).
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw");
        has && avx2() && !NO_AVX512.load(Ordering::Relaxed)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the loops over column panels (f32, f16, bf16, int8: the CPU
/// layout) run their AVX-512 copy rather than AVX2's (the same bits). On
/// an Intel core each 512-bit operation is one, and the AVX-512 copy is the
/// faster (one core of a Xeon with AMX, 124M, f16: decode step 40 → 27 ms,
/// 64-token prefill 242 → 216); a Zen 4-class EPYC splits each into two
/// 256-bit halves, and there the AVX2 copy ran faster (64-token prefill, f16
/// 316 → 189 ms, bf16 267 → 187, f32 210 → 196; decode steps level), so AMD
/// cores keep it. So do a prefill's 8-bit-activation integer sums
/// (`int8_dot`): VNNI in AVX-512's registers where this holds (a decode
/// step's one row runs AVX2's registers on every core, measured the faster).
pub fn wide_panels() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let intel = *INTEL.get_or_init(|| {
            let id = std::arch::x86_64::__cpuid(0);
            let vendor = [id.ebx, id.edx, id.ecx].map(u32::to_le_bytes);
            vendor.concat() == b"GenuineIntel"
        });
        let wide = match PANELS.load(Ordering::Relaxed) {
            BY_VENDOR => intel,
            forced => forced == WIDE,
        };
        avx512() && wide
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether an f16 decode step over column panels, and a lifted f16 LM
/// head's, converts its values with F16C's `vcvtph2ps` in AVX2's registers
/// (`fast::f16c`): where the AVX2 copy of the panels' loops runs (not
/// [`wide_panels`]'s AVX-512 one, whose head is `fast::lm_head_wide`).
pub fn f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("f16c") && avx2() && !wide_panels()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the 8-bit activations' integer sums run AVX-512 VNNI's
/// `vpdpbusd` (on AVX2's registers, or AVX-512's with [`wide_panels`];
/// off with the AVX-512 copies).
pub fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let has = std::arch::is_x86_feature_detected!("avx512vnni")
            && std::arch::is_x86_feature_detected!("avx512vl");
        has && avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether a prefill's 8-bit activations' integer sums run in AMX tiles
/// (where the CPU has AMX-INT8 and the OS grants its state, and the column
/// panels' AVX-512 copy runs: off with it, so each copy below stays testable).
pub fn amx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        wide_panels() && !NO_AMX.load(Ordering::Relaxed) && super::int8_dot_amx::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `f` with AMX's tiles switched off: AVX-512 VNNI's sums run (for a test).
pub fn without_amx<T>(f: impl FnOnce() -> T) -> T {
    NO_AMX.store(true, Ordering::Relaxed);
    let out = f();
    NO_AMX.store(false, Ordering::Relaxed);
    out
}

/// `f` with the AVX2 (and AVX-512) copies switched off (for a test comparing them).
pub fn without_avx2<T>(f: impl FnOnce() -> T) -> T {
    PORTABLE.store(true, Ordering::Relaxed);
    let out = f();
    PORTABLE.store(false, Ordering::Relaxed);
    out
}

/// `f` with the AVX-512 copies switched off: the AVX2 ones run.
pub fn without_avx512<T>(f: impl FnOnce() -> T) -> T {
    NO_AVX512.store(true, Ordering::Relaxed);
    let out = f();
    NO_AVX512.store(false, Ordering::Relaxed);
    out
}

/// `f` with the column panels' AVX-512 copy chosen whatever the core
/// (where the CPU has AVX-512; for a test comparing the copies).
pub fn with_wide_panels<T>(f: impl FnOnce() -> T) -> T {
    with_panels(WIDE, f)
}

/// `f` with the column panels' narrower copies whatever the core (AVX2's,
/// and the integer sums' VNNI on AVX2's registers; for a test).
pub fn with_narrow_panels<T>(f: impl FnOnce() -> T) -> T {
    with_panels(NARROW, f)
}

fn with_panels<T>(choice: u8, f: impl FnOnce() -> T) -> T {
    PANELS.store(choice, Ordering::Relaxed);
    let out = f();
    PANELS.store(BY_VENDOR, Ordering::Relaxed);
    out
}

/// Work (multiply-adds) below which a kernel is not split: a part must
/// outweigh handing it to another thread (a few microseconds).
const MIN_WORK: usize = 1 << 18;

/// How many threads a kernel of `work` multiply-adds is shared among (at
/// least one): the one count that [`parts`], [`parts_by_work`] and
/// [`on_pool`]'s choice of a team all go by.
fn shares(work: usize) -> usize {
    threads().min(work / MIN_WORK).max(1)
}

/// `0..len` cut into contiguous ranges whose starts are multiples of `align`
/// (a whole number of packed words and int4 groups): as many as there are
/// threads, fewer when `work` (the kernel's multiply-adds) is small; one
/// range, `0..len`, on one thread.
pub fn parts(len: usize, work: usize, align: usize) -> Vec<Range<usize>> {
    let n = shares(work).min(len / align.max(1)).max(1);
    let step = len.div_ceil(n).next_multiple_of(align.max(1));
    (0..len).step_by(step.max(1)).map(|s| s..(s + step).min(len)).collect()
}

/// `0..len` cut into contiguous ranges of about equal work (`work(i)`: item
/// i's multiply-adds), as many as there are threads, fewer when the total
/// is small: for items whose work differs (a prefill's causal attention
/// rows, each attending to one key more than the last).
pub fn parts_by_work(len: usize, work: impl Fn(usize) -> usize) -> Vec<Range<usize>> {
    let total: usize = (0..len).map(&work).sum();
    let n = shares(total).min(len).max(1);
    let (mut parts, mut start, mut done) = (Vec::with_capacity(n), 0, 0);
    for i in 0..len {
        done += work(i);
        // a part ends at the first item where `done` reaches its share (so
        // it holds at most one item's work more than its share)
        if parts.len() + 1 < n && done * n >= total * (parts.len() + 1) {
            parts.push(start..i + 1);
            start = i + 1;
        }
    }
    parts.push(start..len);
    parts
}

/// `f` of each part, in order: natively among a forward pass's team
/// ([`on_pool`]), else on rayon's pool.
pub fn map<T: Send>(parts: Vec<Range<usize>>, f: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        match super::team::map(&parts, &f) {
            Some(outs) => outs,
            None => parts.into_par_iter().map(&f).collect(),
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        parts.into_iter().map(f).collect()
    }
}

/// `f` run on one of the pool's threads (natively, with more than one): a
/// forward pass calls it once, so that its kernels' parts are shared out
/// inside the pool, not handed from outside a kernel at a time, two wake-ups
/// each (GPT-2-124M shape, two threads, int4 weights and 8-bit activations:
/// 10,276 context switches a bench run down to 1,648; README, "A forward
/// pass on the pool"). Where `work` (the multiply-adds of the pass's
/// blocks' largest kernel) is shared out, the pool's other threads are held
/// beside it as its team until it returns ([`team`](super::team), README "A
/// forward pass's team"); a smaller pass, whose blocks' kernels run whole,
/// leaves them to other passes (its LM head still shared over the pool).
/// A thread with a coworker installed (the page's second worker, a test's)
/// keeps `f`: the coworker is found on that thread.
pub fn on_pool<T: Send>(work: usize, f: impl FnOnce() -> T + Send) -> T {
    #[cfg(not(target_arch = "wasm32"))]
    if threads() > 1 && !super::coworker::available() {
        if shares(work) > 1 {
            return super::team::lead(f);
        }
        // (Called on one of the pool's threads, `scope` runs `f` in place.)
        return rayon::scope(|_| f());
    }
    let _ = work;
    f()
}

fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::on_pool;

    /// A pass called from outside the pool runs on one of its threads
    /// where it has more than one, else in place.
    #[test]
    fn a_pass_runs_on_the_pool() {
        assert_eq!(rayon::current_thread_index(), None, "the test's own thread");
        let on_pool_thread = on_pool(0, || rayon::current_thread_index().is_some());
        assert_eq!(on_pool_thread, rayon::current_num_threads() > 1);
    }
}

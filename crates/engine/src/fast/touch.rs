//! Starting a cache line's fetch early, for the streaming decode loops.
//!
//! On an Intel core (a 2-core Xeon) the decode steps ran below the memory's
//! speed: every 64-byte line of weights feeds 30–45 instructions that wait
//! for it, they fill the core's scheduler, and so few lines are in flight at
//! once (perf of the page's worker, f16: most samples on the instruction
//! after each line's first load). A fetch that nothing waits on holds no
//! instruction back, and the loop that reaches the line later finds it in
//! cache. Natively that is the prefetch instruction (x86-64's `prefetcht0`:
//! it never faults). WebAssembly has none, so the page loads one element of
//! the line and drops the value. One core, GPT-2-124M shape, decode step:
//! the page's worker f16 51 → 41 ms/token, bf16 40–42 → 33–36, int4 40 →
//! 31; native f16 22.5–24.9 → 19.5–20.2, int8 13.2–13.7 → 11.9–12.1, int4
//! 12.4–13.1 → 10.7–10.9 (README, "The page's worker reads ahead" and "Native
//! loops prefetch"; the f32 panels, already at the memory's speed, were
//! slower with it on the page and level natively).

/// How far ahead of its reads a loop touches its stream: past what the
/// core's own prefetcher covers, and well inside a 32 KiB L1 (measured on
/// the page, f16 decode: 1 KiB 49 ms/token, 4 KiB 45, 8 KiB 44, 16 KiB 42).
pub const AHEAD_BYTES: usize = 8192;

/// The same distance in elements of `T`.
pub const fn ahead<T>() -> usize {
    AHEAD_BYTES / std::mem::size_of::<T>()
}

/// [`touch`]es the part of `stream` [`ahead`] of `part`, once per 64-byte
/// line: for a loop that is about to read `part`, with `stream` the rest of
/// what it reads, in order.
#[inline(always)]
pub fn lines<T>(stream: &[T], part: std::ops::Range<usize>) {
    let line = (64 / std::mem::size_of::<T>()).max(1);
    for at in part.step_by(line) {
        touch(stream, at + ahead::<T>());
    }
}

/// Starts the fetch of `stream[at]`'s cache line, if it is there (past the
/// end, natively, of whatever line that address is in: no check in the loop,
/// which cost the native f16 step most of its gain).
#[inline(always)]
pub fn touch<T>(stream: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    prefetch(stream.as_ptr().wrapping_add(at)); // `wrapping_add`: no access made
    #[cfg(target_arch = "wasm32")]
    if let Some(v) = stream.get(at) {
        // SAFETY: `v` is a live reference. Volatile, so the compiler keeps
        // the load though its value is unused (V8 keeps it too: a wasm load
        // may trap).
        unsafe { core::ptr::read_volatile(v) };
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
    let _ = (stream, at);
}

/// Starts the fetch of the cache line at `p`, whatever the address: x86-64's
/// prefetch reads nothing the program sees and never faults, so loops that
/// hold raw row pointers fetch a next row's line (or one past the matrix)
/// with no check: the next rows' bytes while these rows are read, so that
/// a matrix's rows (short streams, one a row, that the hardware's
/// prefetcher starts late) arrive as one.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: a prefetch reads nothing the program sees and never faults.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
}

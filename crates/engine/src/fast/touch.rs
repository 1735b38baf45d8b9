//! A load that starts a cache line's fetch early, for the page's streaming
//! decode loops. WebAssembly has no prefetch instruction, and on an Intel
//! core (a 2-core Xeon) the page's decode steps ran far below the memory's
//! speed: every 64-byte line of weights feeds 30–45 instructions that wait
//! for it, they fill the core's scheduler, and so few lines are in flight at
//! once (perf of the worker, f16: most samples on the instruction after
//! each line's first load). A load whose value nothing uses holds no
//! instruction back: it only keeps a load slot while its line comes, and the
//! loop that reaches the line later finds it in cache. The page's CPU
//! worker, GPT-2-124M shape, one worker: f16 51 → 41 ms/token, bf16 40–42
//! → 33–36, int4 40 → 31 (README, "The page's worker reads ahead"; the f32
//! panels, already at the memory's speed, were slower with it).

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

/// Loads `stream[at]`, if it is there, and drops the value.
#[inline(always)]
pub fn touch<T>(stream: &[T], at: usize) {
    if let Some(v) = stream.get(at) {
        // SAFETY: `v` is a live reference. Volatile, so the compiler keeps
        // the load though its value is unused (V8 keeps it too: a wasm load
        // may trap).
        unsafe { core::ptr::read_volatile(v) };
    }
}

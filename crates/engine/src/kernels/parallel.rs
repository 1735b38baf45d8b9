//! How the CPU twins share one kernel's outputs among threads: natively over
//! rayon's pool (one thread per core), in wasm on the one thread there is.
//! Each output is still computed by exactly the arithmetic of an unsplit
//! run, so the numbers do not depend on the number of threads.

use std::ops::Range;

/// Work (multiply-adds) below which a kernel is not split: a part must
/// outweigh handing it to another thread (a few microseconds).
const MIN_WORK: usize = 1 << 18;

/// `0..len` cut into contiguous ranges whose starts are multiples of `align`
/// (a whole number of packed words and int4 groups): as many as there are
/// threads, fewer when `work` (the kernel's multiply-adds) is small; one
/// range, `0..len`, on one thread.
pub fn parts(len: usize, work: usize, align: usize) -> Vec<Range<usize>> {
    let n = threads().min(work / MIN_WORK).min(len / align.max(1)).max(1);
    let step = len.div_ceil(n).next_multiple_of(align.max(1));
    (0..len).step_by(step.max(1)).map(|s| s..(s + step).min(len)).collect()
}

/// `f` of each part, in order: on the pool's threads natively.
pub fn map<T: Send>(parts: Vec<Range<usize>>, f: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        parts.into_par_iter().map(&f).collect()
    }
    #[cfg(target_arch = "wasm32")]
    {
        parts.into_iter().map(f).collect()
    }
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

//! Work over a loaded matrix in pieces, each writing its own part of one
//! output vector: natively on rayon's pool, on the page in place (its worker
//! is one thread). Loading spends its time here (packing every weight,
//! widening a checkpoint's values to f32), and in the page faults of fresh
//! memory: one output allocated once (zeroed by the system, not written
//! twice) is faulted in by the threads that fill it, where pieces returned
//! as vectors and joined took a second allocation and a copy of everything.

use std::ops::Range;

/// Weights a piece holds: a multiple of every format's weights a word and of
/// an int4 group, so a piece starts on a word and on a group, and enough work
/// (a few hundred microseconds) to outweigh handing it to another thread.
pub const PIECE: usize = 1 << 16;

/// One value for every `per` of `0..len`'s items (the last `per` may be
/// short), `fill(piece, out)` writing each [`PIECE`]'s values into `out`,
/// its part of the result (zeroed beforehand). `per` divides [`PIECE`].
pub fn in_pieces<T: Copy + Default + Send>(
    len: usize,
    per: usize,
    fill: impl Fn(Range<usize>, &mut [T]) + Sync,
) -> Vec<T> {
    debug_assert!(per > 0 && PIECE.is_multiple_of(per));
    let piece = |i: usize| i * PIECE..((i + 1) * PIECE).min(len);
    in_parts(len.div_ceil(per), PIECE / per, |i, part| fill(piece(i), part))
}

/// `len` values made in parts of `part` values (the last may be short),
/// `fill(i, out)` writing part `i` into `out` (zeroed beforehand).
pub fn in_parts<T: Copy + Default + Send>(
    len: usize,
    part: usize,
    fill: impl Fn(usize, &mut [T]) + Sync,
) -> Vec<T> {
    let mut out = vec![T::default(); len];
    each_part(&mut out, part, fill);
    out
}

/// `f(i, part)` on each part of `part` values of `values` (the last may be
/// short), in place.
pub fn each_part<T: Send>(values: &mut [T], part: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        values.par_chunks_mut(part.max(1)).enumerate().for_each(|(i, o)| f(i, o));
    }
    #[cfg(target_arch = "wasm32")]
    {
        for (i, o) in values.chunks_mut(part.max(1)).enumerate() {
            f(i, o);
        }
    }
}

//! The CPU engine's 8-bit activations (`--activations int8`): the
//! quantiser and each block's float step, which the definition
//! ([`int8_dot`](super::int8_dot)) and its AVX2 loops share (apart from
//! both, so that neither imports the other back).

use crate::storage::quads::OCT;

/// Inputs per activation scale (llama.cpp's Q8_0 block).
pub const BLOCK: usize = 32;

/// One row of x quantised: `(qx, d)`.
pub type Quantised = (Vec<i8>, Vec<f32>);

/// `x` in blocks of [`BLOCK`]: the 8-bit values `round(x / d)` (ties to
/// even, as SIMD rounds), padded with zeros to whole octs, and a scale
/// `d = max|x| / 127` per block (0 for a block of zeros, whose values are
/// 0; a NaN input counts as 0).
pub fn quantise(x: &[f32]) -> Quantised {
    let mut q = vec![0i8; x.len().next_multiple_of(OCT)]; // (⌈k / 8⌉ · 8)
    let d = x.chunks(BLOCK).zip(q.chunks_mut(BLOCK)).map(|(xb, qb)| quantise_block(xb, qb));
    let d = d.collect(); // (⌈k / BLOCK⌉)
    (q, d)
}

/// One block of [`quantise`]: its values into `q`, its scale returned.
pub fn quantise_block(x: &[f32], q: &mut [i8]) -> f32 {
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = max / 127.0;
    let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
    for (q, &v) in q.iter_mut().zip(x) {
        // |v · inverse| ≤ 127 up to rounding; `as` saturates, NaN → 0.
        *q = (v * inverse).round_ties_even() as i8;
    }
    scale
}

/// The last short block of a row whose first `whole` blocks the SIMD
/// quantisers did: `x · s` (`s`: the per-input scales, if any) through
/// [`quantise_block`], its values into `q` and its scale into `d`.
pub fn quantise_tail(x: &[f32], s: Option<&[f32]>, whole: usize, q: &mut [i8], d: &mut [f32]) {
    if whole >= d.len() {
        return;
    }
    let rest = &x[BLOCK * whole..];
    let y: Vec<f32> = match s {
        Some(s) => rest.iter().zip(&s[BLOCK * whole..]).map(|(&x, &s)| x * s).collect(),
        None => rest.to_vec(),
    };
    d[whole] = quantise_block(&y, &mut q[BLOCK * whole..]);
}

/// `acc + d · isum`: one block's step of every output's sum.
#[inline(always)]
pub fn step(acc: f32, d: f32, isum: i32) -> f32 {
    acc + d * isum as f32
}

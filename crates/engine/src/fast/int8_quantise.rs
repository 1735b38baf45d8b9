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
/// even, as SIMD rounds) within ±127, padded with zeros to whole octs, and
/// a scale `d = max|x| / 127` per block (0 for a block of zeros, whose
/// values are 0; a NaN input counts as 0).
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
        // |v · inverse| ≤ 127 up to rounding where the scale is a normal
        // number ([`simd_exact`]); past it (a subnormal scale's inverse is
        // inexact or infinite) the values are held to ±127, never −128,
        // which AVX2's sums cannot negate. NaN → 0 (`as`).
        *q = (v * inverse).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Whether the SIMD quantisers' plain rounding gives [`quantise_block`]'s
/// values for a block of this scale: 0, or a normal number, whose inverse is
/// finite and within two roundings of exact, so that every
/// `|v · inverse| ≤ 127 · (1 + 2⁻²⁴)²` rounds to at most 127 and the clamp
/// never acts. Else (a subnormal or infinite scale) they quantise the block
/// as the definition does ([`quantise_one`]).
#[inline(always)]
pub fn simd_exact(scale: f32) -> bool {
    scale == 0.0 || scale.is_normal()
}

/// Block `b` of x (times `s`, if any) through [`quantise_block`]: its
/// values into `q`, its scale returned.
pub fn quantise_one(x: &[f32], s: Option<&[f32]>, b: usize, q: &mut [i8]) -> f32 {
    let at = BLOCK * b..x.len().min(BLOCK * (b + 1));
    let y: Vec<f32> = match s {
        Some(s) => x[at.clone()].iter().zip(&s[at.clone()]).map(|(&x, &s)| x * s).collect(),
        None => x[at.clone()].to_vec(),
    };
    quantise_block(&y, &mut q[at.start..])
}

/// The last short block of a row whose first `whole` blocks the SIMD
/// quantisers did, through [`quantise_one`]: its values into `q` and its
/// scale into `d`.
pub fn quantise_tail(x: &[f32], s: Option<&[f32]>, whole: usize, q: &mut [i8], d: &mut [f32]) {
    if whole < d.len() {
        d[whole] = quantise_one(x, s, whole, q);
    }
}

/// `acc + d · isum`: one block's step of every output's sum.
#[inline(always)]
pub fn step(acc: f32, d: f32, isum: i32) -> f32 {
    acc + d * isum as f32
}

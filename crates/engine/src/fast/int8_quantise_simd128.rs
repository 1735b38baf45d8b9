//! `x`, or `y = x · s` (a row of x in one int4 panel's scales), quantised
//! into `q` and `d` block by block in wasm SIMD128, as the definition's
//! `quantise_block`: the same maximum (`f32x4.pmax` keeps the running
//! maximum against a NaN lane, as `f32::max` does), the same scale,
//! rounding ties to even, NaN to 0 and saturating as `as` does; a last
//! short block, and one whose scale is not `simd_exact`, through
//! `quantise_block` itself.
//!
//! Blocks go [`GROUP`] at a time, as natively (`int8_quantise_avx2`):
//! their maxima meet in one vector, and one division each gives the four
//! scales and their inverses, where each block took its last steps across
//! lanes and two scalar divisions alone.

use core::arch::wasm32::*;

use super::int8_quantise::{quantise_one, quantise_tail, simd_exact, BLOCK};

/// Floats a vector.
const LANES: usize = 4;

/// Blocks whose scales are found together: one vector of maxima.
const GROUP: usize = 4;

/// A block of y: its 32 values.
type Block = [v128; BLOCK / LANES];

/// x (or `x · s`) quantised into `q` (`(⌈k / 8⌉ · 8)`) and `d`
/// (`(⌈k / BLOCK⌉)`) block by block, as `quantise_block` does.
pub fn quantise(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    let whole = x.len() / BLOCK;
    let groups = whole / GROUP;
    for g in (0..groups).map(|g| g * GROUP) {
        if !group(x, s, g, q, &mut d[g..g + GROUP]) {
            for (b, d) in d.iter_mut().enumerate().skip(g).take(GROUP) {
                *d = one(x, s, b, q);
            }
        }
    }
    for (b, d) in d.iter_mut().enumerate().take(whole).skip(groups * GROUP) {
        *d = one(x, s, b, q);
    }
    quantise_tail(x, s, whole, q, d);
}

/// Block `b` of y.
#[inline(always)]
fn block(x: &[f32], s: Option<&[f32]>, b: usize) -> Block {
    let x = &x[BLOCK * b..][..BLOCK];
    let s = s.map(|s| &s[BLOCK * b..][..BLOCK]);
    std::array::from_fn(|h| match s {
        Some(s) => f32x4_mul(load(&x[LANES * h..]), load(&s[LANES * h..])),
        None => load(&x[LANES * h..]),
    })
}

/// The block's |y| maxima in each of four lanes (all ≥ +0, none NaN).
#[inline(always)]
fn maxima(y: &Block) -> v128 {
    y.iter().fold(f32x4_splat(0.0), |m, &v| f32x4_pmax(m, f32x4_abs(v)))
}

/// Block `b` alone: its values into `q`, its scale returned.
fn one(x: &[f32], s: Option<&[f32]>, b: usize, q: &mut [i8]) -> f32 {
    let y = block(x, s, b);
    let m = maxima(&y);
    // The lanes' maximum (any order is exact).
    let m = f32x4_pmax(m, i32x4_shuffle::<2, 3, 0, 1>(m, m));
    let m = f32x4_pmax(m, i32x4_shuffle::<1, 0, 3, 2>(m, m));
    let scale = f32x4_extract_lane::<0>(m) / 127.0;
    if !simd_exact(scale) {
        return quantise_one(x, s, b, q);
    }
    store(&y, if scale > 0.0 { 1.0 / scale } else { 0.0 }, &mut q[BLOCK * b..]);
    scale
}

/// Blocks `g..g + GROUP` into `q` and their scales into `d`, or false
/// (nothing written) where one of them is not `simd_exact`'s. The blocks
/// are read twice (from L1).
fn group(x: &[f32], s: Option<&[f32]>, g: usize, q: &mut [i8], d: &mut [f32]) -> bool {
    let m: [v128; GROUP] = std::array::from_fn(|i| maxima(&block(x, s, g + i)));
    // Block i's maximum in lane i: pairs of lanes, then pairs of pairs.
    let pair =
        |a, b| f32x4_pmax(i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b));
    let (low, high) = (pair(m[0], m[1]), pair(m[2], m[3]));
    let m =
        f32x4_pmax(i32x4_shuffle::<0, 1, 4, 5>(low, high), i32x4_shuffle::<2, 3, 6, 7>(low, high));
    let scale = f32x4_div(m, f32x4_splat(127.0));
    // simd_exact: 0, or an exponent field neither 0 (subnormal) nor 255
    // (infinite); the scales are never negative or NaN.
    let exponent = u32x4_shr(scale, 23);
    let normal = v128_and(i32x4_gt(exponent, i32x4_splat(0)), i32x4_lt(exponent, i32x4_splat(255)));
    if !i32x4_all_true(v128_or(normal, i32x4_eq(scale, i32x4_splat(0)))) {
        return false;
    }
    // 1 / scale, and 0 for a scale of 0 (whose 1 / 0 is infinite).
    let inverse = v128_and(f32x4_div(f32x4_splat(1.0), scale), f32x4_gt(scale, f32x4_splat(0.0)));
    let mut inverses = [0.0f32; GROUP];
    // SAFETY: four floats each (`d`'s slice is checked); wasm stores unaligned.
    unsafe {
        v128_store(d[..GROUP].as_mut_ptr().cast(), scale);
        v128_store(inverses.as_mut_ptr().cast(), inverse);
    }
    for (i, inverse) in inverses.into_iter().enumerate() {
        store(&block(x, s, g + i), inverse, &mut q[BLOCK * (g + i)..]);
    }
    true
}

/// A block's values `round(y · inverse)` as bytes into `q` (32 long).
#[inline(always)]
fn store(y: &Block, inverse: f32, q: &mut [i8]) {
    let inverse = f32x4_splat(inverse);
    let ints = y.map(|v| i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(v, inverse))));
    let halves: [v128; 4] =
        std::array::from_fn(|i| i16x8_narrow_i32x4(ints[2 * i], ints[2 * i + 1]));
    let bytes =
        [i8x16_narrow_i16x8(halves[0], halves[1]), i8x16_narrow_i16x8(halves[2], halves[3])];
    for (i, v) in bytes.into_iter().enumerate() {
        let out = &mut q[16 * i..][..16];
        // SAFETY: sixteen bytes are there (the slice is checked); wasm stores unaligned.
        unsafe { v128_store(out.as_mut_ptr().cast(), v) };
    }
}

/// Four f32s from `v` (at least four long).
#[inline(always)]
fn load(v: &[f32]) -> v128 {
    let v = &v[..LANES];
    // SAFETY: four floats are there (the slice is checked); wasm loads unaligned.
    unsafe { v128_load(v.as_ptr().cast()) }
}

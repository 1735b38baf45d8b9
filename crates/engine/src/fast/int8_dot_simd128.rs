//! [`int8_dot`](super::int8_dot)'s sums in wasm SIMD128 (the page's CPU
//! worker). A vector holds four columns' words (16 bytes); their bytes, as
//! sixteen-bit lanes, meet the row's inputs `[x0, x1, x2, x3, x0, …, x3]`
//! in `i32x4.dot_i16x8_s`, which adds each pair of products: two lanes a
//! column, added at the block's end. int4 fields are unsigned nibbles here
//! (`field + 8`), so a block's sum takes `8 · Σ qy` off. The integer sums
//! are exact in any order and each block's float step is the definition's
//! IEEE operations in its order, so the bits are the definition's (the
//! browser test computes the native fingerprints of `portable_forward.rs`).
//! Loops run block by block, then four columns at a time over the block's
//! words (in L1), so a row's sums stay in a few registers.

use core::arch::wasm32::*;

use super::int8_quantise::BLOCK;
use crate::storage::panels::PANEL;
use crate::storage::quads::{OCT, QUAD};

/// Columns a vector.
const LANES: usize = 4;

/// Inputs `at..at + 4` of `q` as sixteen-bit lanes, twice.
#[inline(always)]
fn twice4(q: &[i8], at: usize) -> v128 {
    let x = |t: usize| i16::from(q[at + t]);
    i16x8(x(0), x(1), x(2), x(3), x(0), x(1), x(2), x(3))
}

/// Words `at..at + 4` of `words`: four columns' bytes.
#[inline(always)]
fn load4(words: &[u32], at: usize) -> v128 {
    let w = &words[at..at + LANES];
    // SAFETY: four words are there (the slice is checked); wasm loads unaligned.
    unsafe { v128_load(w.as_ptr().cast()) }
}

/// Four f32s from `v` (at least four long).
#[inline(always)]
fn load_f32(v: &[f32]) -> v128 {
    let v = &v[..LANES];
    // SAFETY: four floats are there (the slice is checked); wasm loads unaligned.
    unsafe { v128_load(v.as_ptr().cast()) }
}

/// Four f32s into `o` (at least four long).
#[inline(always)]
fn store_f32(o: &mut [f32], v: v128) {
    let o = &mut o[..LANES];
    // SAFETY: four floats are there (the slice is checked); wasm stores unaligned.
    unsafe { v128_store(o.as_mut_ptr().cast(), v) }
}

/// The four columns' sums from their two lanes each: `sum[0]` holds
/// columns 0 and 1, `sum[1]` columns 2 and 3.
#[inline(always)]
fn columns(sum: [v128; 2]) -> v128 {
    let evens = i32x4_shuffle::<0, 2, 4, 6>(sum[0], sum[1]);
    i32x4_add(evens, i32x4_shuffle::<1, 3, 5, 7>(sum[0], sum[1]))
}

/// `acc + ds · isum`, lane by lane: the definition's step.
#[inline(always)]
fn step(acc: v128, ds: v128, isum: v128) -> v128 {
    f32x4_add(acc, f32x4_mul(ds, f32x4_convert_i32x4(isum)))
}

/// [`int8_dot`](super::int8_dot)'s quad panel for `R` quantised rows of x:
/// `o[j] = b[j] + acc[j] · s[j]`, bit for bit.
pub fn panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
) {
    const QUADS: usize = BLOCK / QUAD; // quads a block
    let n_quads = panel.len() / PANEL;
    let mut acc = [[f32x4_splat(0.0); PANEL / LANES]; R];
    for blk in 0..x[0].1.len() {
        let quads = blk * QUADS..n_quads.min((blk + 1) * QUADS);
        let xs: [[v128; QUADS]; R] = std::array::from_fn(|r| {
            std::array::from_fn(|i| match quads.start + i < quads.end {
                true => twice4(x[r].0, QUAD * (quads.start + i)),
                false => i16x8_splat(0),
            })
        });
        for h in 0..PANEL / LANES {
            let mut sums = [[i32x4_splat(0); 2]; R];
            for (i, q4) in quads.clone().enumerate() {
                let w = load4(panel, q4 * PANEL + LANES * h);
                let (lo, hi) = (i16x8_extend_low_i8x16(w), i16x8_extend_high_i8x16(w));
                for (sum, xs) in sums.iter_mut().zip(&xs) {
                    sum[0] = i32x4_add(sum[0], i32x4_dot_i16x8(lo, xs[i]));
                    sum[1] = i32x4_add(sum[1], i32x4_dot_i16x8(hi, xs[i]));
                }
            }
            for ((acc, sum), &(_, d)) in acc.iter_mut().zip(sums).zip(&x) {
                acc[h] = step(acc[h], f32x4_splat(d[blk]), columns(sum));
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            let at = LANES * h;
            store_f32(
                &mut o[at..],
                f32x4_add(load_f32(&b[at..]), f32x4_mul(a, load_f32(&s[at..]))),
            );
        }
    }
}

/// [`int8_dot`](super::int8_dot)'s int4 oct panel for `R` quantised rows
/// (a matrix's: `s` None; a head's: `s` its lanes' scales by block,
/// `(blocks, PANEL)`): `o[j] = b[j] + Σ_b (d_b [· s(b, j)]) · isum_b`, bit
/// for bit.
pub fn int4_panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    const OCTS: usize = BLOCK / OCT; // octs a block
    let n_octs = panel.len() / PANEL;
    let low = u8x16_splat(0x0f);
    let mut acc = [[f32x4_splat(0.0); PANEL / LANES]; R];
    for blk in 0..x[0].1.len() {
        let octs = blk * OCTS..n_octs.min((blk + 1) * OCTS);
        // Byte t of a word holds field t (low nibble) and field t + 4 (high).
        let xs: [[(v128, v128); OCTS]; R] = std::array::from_fn(|r| {
            std::array::from_fn(|i| match octs.start + i < octs.end {
                true => {
                    let at = OCT * (octs.start + i);
                    (twice4(x[r].0, at), twice4(x[r].0, at + QUAD))
                }
                false => (i16x8_splat(0), i16x8_splat(0)),
            })
        });
        let offsets: [v128; R] = std::array::from_fn(|r| i32x4_splat(8 * block_sum(x[r].0, blk)));
        for h in 0..PANEL / LANES {
            let mut sums = [[i32x4_splat(0); 2]; R];
            for (i, o8) in octs.clone().enumerate() {
                let w = load4(panel, o8 * PANEL + LANES * h);
                let (lo, hi) = (v128_and(w, low), u8x16_shr(w, 4));
                let (lo_a, lo_b) = (u16x8_extend_low_u8x16(lo), u16x8_extend_high_u8x16(lo));
                let (hi_a, hi_b) = (u16x8_extend_low_u8x16(hi), u16x8_extend_high_u8x16(hi));
                for (sum, xs) in sums.iter_mut().zip(&xs) {
                    let (xlo, xhi) = xs[i];
                    let a = i32x4_add(i32x4_dot_i16x8(lo_a, xlo), i32x4_dot_i16x8(hi_a, xhi));
                    let b = i32x4_add(i32x4_dot_i16x8(lo_b, xlo), i32x4_dot_i16x8(hi_b, xhi));
                    sum[0] = i32x4_add(sum[0], a);
                    sum[1] = i32x4_add(sum[1], b);
                }
            }
            for (((acc, sum), &(_, d)), offset) in acc.iter_mut().zip(sums).zip(&x).zip(offsets) {
                let isum = i32x4_sub(columns(sum), offset);
                let ds = match s {
                    Some(s) => {
                        f32x4_mul(f32x4_splat(d[blk]), load_f32(&s[blk * PANEL + LANES * h..]))
                    }
                    None => f32x4_splat(d[blk]),
                };
                acc[h] = step(acc[h], ds, isum);
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            let at = LANES * h;
            store_f32(&mut o[at..], f32x4_add(load_f32(&b[at..]), a));
        }
    }
}

/// Σ qy over block `blk` (its padding zero) as an integer.
fn block_sum(qy: &[i8], blk: usize) -> i32 {
    let q = &qy[(BLOCK * blk).min(qy.len())..];
    q[..q.len().min(BLOCK)].iter().map(|&v| i32::from(v)).sum()
}

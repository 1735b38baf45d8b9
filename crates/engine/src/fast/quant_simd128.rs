//! int4 decode steps and the int4 and int8 LM heads in wasm SIMD128
//! intrinsics, four lanes a vector. SIMD128 shifts every lane by the same
//! count, so a word's eight fields cannot be eight lanes without a multiply
//! per lane (`i32x4.mul`, slow on x86); instead each lane holds a different
//! word and field t of all of them is two shifts (left to the top, then down
//! with the sign). The outputs or the dot's lanes are kept in that order
//! while k runs. These are the twin's products and sums in its order, so
//! the bits are the twin's (the browser tests run `f16_paths.rs`'s
//! fast-against-twin cases in Chromium). The page's CPU worker, 124M shape,
//! one worker: int4 62.9 → 42.2 ms/token (f16 63.2).
//!
//! The int8 LM head: sixteen bytes are one vector, widened with their sign
//! (i8 → i16 → i32) into four vectors of four lanes in order, multiplied as
//! they are widened (the portable loop unpacked each head row into a buffer,
//! then read it back for the dot): the page's worker, 124M shape, int8
//! decode 24.0–25.0 → 20.0–22.3 ms/token on an AMD core. The int8 panels
//! keep the compiler's vectors of the portable loop: intrinsics with their
//! sums in registers were faster on this AMD core (about 10 %) and far
//! slower on an Intel one (README, "Native loops prefetch").

use core::arch::wasm32::*;
use std::ops::Range;

use super::int4_rows;
use super::touch::{ahead, touch};
use crate::storage::format::{Channels, Format, GROUP};
use crate::storage::matrix::Matrix;

/// The weights of fields `f` of a group with scale `s`: `field · s`, the
/// twin's ([`Format::load`]).
#[inline(always)]
fn weights(f: v128, s: v128) -> v128 {
    f32x4_mul(f32x4_convert_i32x4(f), s)
}

/// Four f32s from `v` (at least four long).
#[inline(always)]
fn load(v: &[f32]) -> v128 {
    f32x4(v[0], v[1], v[2], v[3])
}

/// Sixteen int8 fields `q[..16]` as four vectors of i32, lanes in order.
#[inline(always)]
fn int8_fields(q: &[i8]) -> [v128; 4] {
    let q = &q[..16];
    // SAFETY: sixteen bytes are there (the slice is checked); wasm loads unaligned.
    let v = unsafe { v128_load(q.as_ptr().cast()) };
    let (lo, hi) = (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v));
    [
        i32x4_extend_low_i16x8(lo),
        i32x4_extend_high_i16x8(lo),
        i32x4_extend_low_i16x8(hi),
        i32x4_extend_high_i16x8(hi),
    ]
}

/// `matmul_quant`'s int4 decode step: out[j] = bias[j] + Σ_k x[k] · w[k, j]
/// for columns `c` (whole groups), each output adding its k products one by
/// one in order 0..k, as the twin.
///
/// A group's four words are one vector, so field t of all four is two
/// shifts by one count (no multiply): lanes j = columns 8j + t. The outputs
/// are kept in that order while k runs (`acc[32g + 4t + j]` is column
/// `32g + 8j + t`), eight vectors a group, and put back in order at the end.
pub fn int4_matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let cols = c.len();
    let mut acc = vec![0.0; cols]; // (cols / 32, 8, 4) the outputs, fields apart
    transpose(bias, &mut acc, |a, b| (a, b));
    if !x.is_empty() {
        let parts = int4_rows::Parts::new(w, x.len(), c); // every row's columns c
        assert_eq!(acc.len(), parts.groups() * GROUP);
        let mut kk = 0;
        while kk + 8 <= x.len() {
            let xs = std::array::from_fn(|i| x[kk + i]);
            // SAFETY: rows kk..kk + 8 are the matrix's (< x.len()), each
            // with acc's groups (asserted).
            unsafe { add_int4::<8>(&mut acc, xs, parts.at(kk), (&parts, kk + 8)) };
            kk += 8;
        }
        for (kk, &xk) in x.iter().enumerate().skip(kk) {
            // SAFETY: as above, row kk < x.len(); nothing touched ahead.
            unsafe { add_int4::<1>(&mut acc, [xk], parts.at(kk), (&parts, x.len())) };
        }
    }
    transpose(&acc, out, |a, b| (b, a));
}

/// Column `32g + 8j + t` (in order) and place `32g + 4t + j` (fields apart)
/// of each group: `order(in order, apart)` gives (from, to).
fn transpose(from: &[f32], to: &mut [f32], order: fn(usize, usize) -> (usize, usize)) {
    for (f, t) in from.chunks_exact(GROUP).zip(to.chunks_exact_mut(GROUP)) {
        for (j, tt) in (0..4).flat_map(|j| (0..8).map(move |tt| (j, tt))) {
            let (a, b) = order(8 * j + tt, 4 * tt + j);
            t[b] = f[a];
        }
    }
}

/// acc += x_i · w_i for each x_i and row i's words and scales (`rows`,
/// [`int4_rows::Parts::at`]) in order, the outputs fields apart; `next`:
/// the rows from this one on are the next step's, touched a cache line
/// (four groups) at a time as the same columns of these rows are read
/// (those past the matrix are not). Rows are read through their pointers,
/// checked once for the whole matrix (`Parts`).
///
/// # Safety
/// Each of `rows` holds `acc.len() / GROUP` groups' words and scales.
#[inline(always)]
unsafe fn add_int4<const N: usize>(
    acc: &mut [f32],
    xs: [f32; N],
    rows: [(*const u32, *const f32); N],
    next: (&int4_rows::Parts, usize),
) {
    for (g, a) in acc.chunks_exact_mut(GROUP).enumerate() {
        if g % 4 == 0 {
            for i in 0..N {
                next.0.touch(next.1 + i, 4 * g);
            }
        }
        let mut sums: [v128; 8] = std::array::from_fn(|t| load(&a[4 * t..]));
        for (&xk, &(words, scales)) in xs.iter().zip(&rows) {
            // SAFETY: g < groups, and each row has that many groups' four
            // words and scale (the caller's promise); wasm loads need no
            // alignment.
            let (v, s) = unsafe { (v128_load(words.add(4 * g).cast()), *scales.add(g)) };
            let (xv, s) = (f32x4_splat(xk), f32x4_splat(s));
            for (t, sum) in (0..8).zip(sums.iter_mut()) {
                let f = i32x4_shr(i32x4_shl(v, 28 - 4 * t), 28); // field t of each word
                *sum = f32x4_add(*sum, f32x4_mul(xv, weights(f, s)));
            }
        }
        for (t, sum) in sums.into_iter().enumerate() {
            store(&mut a[4 * t..], sum);
        }
    }
}

/// `v`'s four lanes into `o[..4]`.
#[inline(always)]
fn store(o: &mut [f32], v: v128) {
    o[..4].copy_from_slice(&[
        f32x4_extract_lane::<0>(v),
        f32x4_extract_lane::<1>(v),
        f32x4_extract_lane::<2>(v),
        f32x4_extract_lane::<3>(v),
    ]);
}

/// `lm_head`'s dot products for one row of x and a head [`takes_head`]
/// takes: int4's ([`int4_head`]) or int8's ([`int8_head`]).
pub fn head(
    x: &[f32], // (n_embd)
    head: &Matrix,
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32], // (vr.len())
) {
    match head.format {
        Format::Int4 => int4_head(x, head, vr, combine, out),
        _ => int8_head(x, head, vr, combine, out),
    }
}

/// Whether [`head`] takes this head: int4, whole
/// groups a row; int8 with a scale a row (or one for the matrix), whole
/// sixteens a row.
pub fn takes_head(head: &Matrix) -> bool {
    let row_scale = match head.format {
        Format::Int8 => head.channels == Channels::Rows,
        format => format == Format::Int8PerTensor,
    };
    let int4 = head.format == Format::Int4 && head.cols.is_multiple_of(GROUP);
    int4 || (row_scale && head.cols.is_multiple_of(16))
}

/// `lm_head`'s dot products for one row of x and an int8 head with a scale
/// a row ([`takes_head`]): out[v] is x · row `vr.start + v`, each as the
/// twin's sixteen lanes (lane L adds the products k ≡ L (mod 16), in order
/// of k: vector t holds lanes 4t..4t + 4) put together by `combine`. Each
/// row's bytes are read once, into registers, touched [`ahead`] of their reads.
fn int8_head(
    x: &[f32], // (n_embd)
    head: &Matrix,
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32], // (vr.len())
) {
    let n_embd = head.cols;
    let q: &[i8] = bytemuck::cast_slice(head.words()); // (n_vocab, n_embd) the fields
    let scale = |v: usize| match head.format {
        Format::Int8 => head.scales()[v],
        _ => head.scales()[0],
    };
    for (o, v) in out.iter_mut().zip(vr) {
        let (row, s) = (&q[v * n_embd..][..n_embd], f32x4_splat(scale(v)));
        let mut sums = [f32x4_splat(0.0); 4]; // sums[t]: the twin's lanes 4t..4t + 4
        for (p, (b, xp)) in row.chunks_exact(16).zip(x.chunks_exact(16)).enumerate() {
            if p % 4 == 0 {
                touch(q, v * n_embd + 16 * p + ahead::<i8>()); // a line at a time
            }
            for (t, (sum, f)) in sums.iter_mut().zip(int8_fields(b)).enumerate() {
                *sum = f32x4_add(*sum, f32x4_mul(load(&xp[4 * t..]), weights(f, s)));
            }
        }
        let mut lanes = [0.0f32; 16];
        for (sum, four) in sums.into_iter().zip(lanes.chunks_exact_mut(4)) {
            store(four, sum);
        }
        *o = combine(lanes);
    }
}

/// `lm_head`'s dot products for one row of x and an int4 head
/// ([`takes_head`]): out[v] is x · row `vr.start + v` of the head, each as
/// the twin's sixteen lanes (lane L adds the products k ≡ L (mod 16), in
/// order of k) put together by `combine`.
///
/// Sixteen elements are two words, w0 then w1. One byte shuffle makes the
/// vector (w0, w1, w0 >> 16, w1 >> 16), whose field t (t < 4) is then two
/// shifts by one count, no multiply: lanes L = t, 8 + t, 4 + t, 12 + t, four
/// different lanes of the twin, each still adding its elements in order. x
/// is put in that order once for all the rows.
fn int4_head(
    x: &[f32], // (n_embd)
    head: &Matrix,
    vr: Range<usize>,
    combine: fn([f32; 16]) -> f32,
    out: &mut [f32], // (vr.len())
) {
    const LANE: [[usize; 4]; 4] = [[0, 8, 4, 12], [1, 9, 5, 13], [2, 10, 6, 14], [3, 11, 7, 15]];
    let n_embd = head.cols;
    let mut xs = vec![0.0; n_embd]; // (n_embd / 16, 4, 4) x: element 16p + LANE[t][l] at 16p + 4t + l
    for (from, to) in x.chunks_exact(16).zip(xs.chunks_exact_mut(16)) {
        for (t, lanes) in LANE.iter().enumerate() {
            for (l, &e) in lanes.iter().enumerate() {
                to[4 * t + l] = from[e];
            }
        }
    }
    let spread = i8x16(0, 1, 2, 3, 4, 5, 6, 7, 2, 3, -1, -1, 6, 7, -1, -1);
    for (o, v) in out.iter_mut().zip(vr) {
        let (words, scales) = head.int4_part(v, 0..n_embd); // (n_embd / 8), (n_embd / GROUP)
        let mut sums = [f32x4_splat(0.0); 4]; // sums[t] lane l: the twin's lane LANE[t][l]
        for (p, (pair, xp)) in words.chunks_exact(2).zip(xs.chunks_exact(16)).enumerate() {
            let (w, s) = (u32x4(pair[0], pair[1], 0, 0), f32x4_splat(scales[p * 16 / GROUP]));
            let w = i8x16_swizzle(w, spread); // (w0, w1, w0 >> 16, w1 >> 16)
            for (t, sum) in (0..4).zip(sums.iter_mut()) {
                let f = i32x4_shr(i32x4_shl(w, 28 - 4 * t), 28);
                *sum = f32x4_add(*sum, f32x4_mul(load(&xp[4 * t as usize..]), weights(f, s)));
            }
        }
        let mut lanes = [0.0f32; 16];
        for (sum, at) in sums.into_iter().zip(LANE) {
            let mut four = [0.0f32; 4];
            store(&mut four, sum);
            for (v, l) in four.into_iter().zip(at) {
                lanes[l] = v;
            }
        }
        *o = combine(lanes);
    }
}

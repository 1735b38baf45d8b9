//! The CPU engine's loops for [`kernels::lm_head`](crate::kernels::lm_head)'s
//! twin: sixteen-lane dot products (in SIMD128 intrinsics in wasm), f16 read
//! straight from its words, threads, AVX2 and the coworker; the same sums in
//! every path.

use std::ops::Range;

use super::lm_head_rows::{Panelled, Scales};
use super::{coworker, parallel};
use crate::storage::f16_bits::raw_inputs;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::{split, Matrix};
use crate::storage::pair::{Bf16, Pair, F16};
use crate::storage::quads::Dot8;
use crate::storage::row_panels;

/// Partial sums of one dot product: lane j adds the products k ≡ j (mod 16).
const LANES: usize = 16;

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out, where
/// `lm_head` is the shard of rows `v0..v0 + lm_head.rows` of the head and
/// logits rows are `vocab_size` wide (the other shards write the rest). Each
/// dot product is [`dot`]'s: sixteen partial sums, the same in every format
/// and however the rows are shared among threads.
pub fn run(
    x: &[f32],        // (n_rows, n_embd)
    lm_head: &Matrix, // (n_vocab, n_embd) in its format: rows v0.. of the head
    v0: usize,
    vocab_size: usize,
    row0: usize,
    n_out: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    let (n_vocab, n_embd) = (lm_head.rows, lm_head.cols);
    let x = &x[row0 * n_embd..][..n_out * n_embd]; // (n_out, n_embd) the wanted rows
    let theirs_here = |s: usize| part(x, lm_head, s..n_vocab);
    if let Some((split, mine, theirs)) = coworker::split_product(lm_head, x, n_out, theirs_here) {
        let rows = mine.chunks_exact(split).zip(theirs.chunks_exact(n_vocab - split));
        for (r, (a, b)) in rows.enumerate() {
            let row = &mut logits[r * vocab_size + v0..][..n_vocab];
            row[..split].copy_from_slice(a);
            row[split..].copy_from_slice(b);
        }
        return;
    }
    rows_of(x, lm_head, 0..n_vocab, &mut logits[v0..], vocab_size);
}

/// The logits of head rows `vr` for each row of `x`, shared among threads:
/// row `r`'s at `out[r * stride..][..vr.len()]`. [`run`] unshared, and the
/// coworker's engine thread's part straight from the head it splits.
pub(crate) fn rows_of(
    x: &[f32],
    lm_head: &Matrix,
    vr: Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let (n, n_embd) = (vr.len(), lm_head.cols);
    let n_out = x.len() / n_embd.max(1);
    // Whole row panels a thread (the f32 head's CPU layout; any cut gives
    // the same bits), counted from 0 (`vr` starts on a shard boundary).
    let parts = parallel::parts(n, n * n_embd * n_out, row_panels::ROWS);
    let outs =
        parallel::map(parts.clone(), |p| part(x, lm_head, vr.start + p.start..vr.start + p.end));
    for (p, o) in parts.into_iter().zip(outs) {
        for (r, pr) in o.chunks_exact(p.len()).enumerate() {
            out[r * stride + p.start..][..p.len()].copy_from_slice(pr);
        }
    }
}

/// The logits of head rows `vr` for each row of `x`: `(n_out, vr.len())`.
fn part(x: &[f32], lm_head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    if lm_head.int8_activations() == Some(Dot8::Rows) {
        return super::int8_dot::head(x, lm_head, vr);
    }
    // AVX2 for f16 too where the CPU has AVX-512: the AVX-512 copy of these
    // loops (the compiler's sixteen lanes) ran a 50257 × 768 f16 head in
    // 6.2 ms on one core of a Zen 4-class EPYC, AVX2's intrinsics in 3.9.
    // (Inside, a decode step's f16, bf16 and int8 heads take their own
    // AVX-512 loops where the column panels do: `lm_head_wide`, `lm_head_rows`.)
    #[cfg(target_arch = "x86_64")]
    if parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { part_avx2(x, lm_head, vr) };
    }
    part_here(x, lm_head, vr, false)
}

/// [`part_here`] compiled for AVX2: the same loops, eight lanes wide, and
/// the two-weights-a-word dot in AVX2 intrinsics ([`avx2::lane_sums`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn part_avx2(x: &[f32], lm_head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    part_here(x, lm_head, vr, true)
}

/// Row-outer: each packed row of the head is read once for all n_out rows.
/// `avx2`: compiled for AVX2 (and not AVX-512), where [`dot_words`] has its
/// own intrinsics.
#[inline(always)]
fn part_here(x: &[f32], lm_head: &Matrix, vr: Range<usize>, avx2: bool) -> Vec<f32> {
    let (n_embd, n) = (lm_head.cols, vr.len());
    let mut out = vec![0.0; x.len() / n_embd * n]; // (n_out, n)
    let rows = vr.start * n_embd / 2..vr.end * n_embd / 2; // words of head rows vr: (n, n_embd / 2)
    if let Some(head) = row_panels(lm_head) {
        super::lm_head_rows::run(x, n_embd, head, lm_head.rows, vr, combine, avx2, &mut out);
        return out;
    }
    if let Some(words) = lm_head.f16_words() {
        let (words, scale) = (&words[rows.clone()], lm_head.f16_scale());
        // A decode step of a lifted head: F16C's conversion where AVX2's
        // copy runs, eight rows at a time where AVX-512's does (the same bits).
        #[cfg(target_arch = "x86_64")]
        if avx2 && x.len() == n_embd && lm_head.is_lifted() {
            let wide = super::lm_head_wide::takes(n_embd);
            let scaled = (wide || f16c_head(n_embd)).then(|| super::f16c::inputs(x));
            if let Some(scaled) = scaled.flatten() {
                use super::lm_head_wide::{rows, Words};
                // SAFETY: the CPU has AVX-512 F and F16C (`takes` checked).
                let done = match wide {
                    true => unsafe { rows(&scaled, words, Words::F16Lifted, combine, &mut out) },
                    false => 0,
                };
                let words = &words[done * n_embd / 2..];
                // SAFETY: the CPU has AVX2 (`avx2`) and F16C (`takes` or f16c_head checked).
                unsafe { super::f16c::head(&scaled, words, combine, &mut out[done..]) };
                return out;
            }
        }
        // x scaled for raw weights where every scaled input is finite: (n_out, n_embd)
        match raw_inputs(x, scale) {
            Some(scaled) => {
                pair_part(&scaled, words, F16::<true> { scale }, n_embd, avx2, &mut out)
            }
            None => pair_part(x, words, F16::<false> { scale }, n_embd, avx2, &mut out),
        }
        return out;
    }
    if let Some(words) = lm_head.bf16_words() {
        let words = &words[rows.clone()];
        // A decode step eight rows at a time where AVX-512's copy runs.
        #[cfg(target_arch = "x86_64")]
        let done = match avx2 && x.len() == n_embd && super::lm_head_wide::takes(n_embd) {
            // SAFETY: the CPU has AVX-512 F and F16C (`takes` checked).
            true => unsafe {
                use super::lm_head_wide::{rows, Words};
                rows(x, words, Words::Bf16, combine, &mut out)
            },
            false => 0,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        pair_part(x, &words[done * n_embd / 2..], Bf16, n_embd, avx2, &mut out[done..]);
        return out;
    }
    #[cfg(target_arch = "x86_64")]
    if x.len() == n_embd && super::quant_avx512::takes_head(lm_head) && parallel::avx512() {
        // SAFETY: the CPU has AVX-512 F (just checked).
        unsafe { super::quant_avx512::head(x, lm_head, vr, combine, &mut out) };
        return out;
    }
    #[cfg(target_arch = "x86_64")]
    if x.len() == n_embd && super::quant_avx2::takes_head(lm_head) && parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        unsafe { super::quant_avx2::head(x, lm_head, vr, combine, &mut out) };
        return out;
    }
    #[cfg(target_arch = "wasm32")]
    if x.len() == n_embd && super::quant_simd128::takes_head(lm_head) {
        super::quant_simd128::head(x, lm_head, vr, combine, &mut out);
        return out;
    }
    let mut buf = Vec::new();
    for v in vr.clone() {
        let wr = lm_head.row(v, &mut buf);
        for (r, xr) in x.chunks_exact(n_embd).enumerate() {
            out[r * n + v - vr.start] = dot(xr, wr);
        }
    }
    out
}

/// A head in row panels, as [`lm_head_rows`](super::lm_head_rows) reads it.
fn row_panels(head: &Matrix) -> Option<Panelled<'_>> {
    if let Some(values) = head.f32_row_panels() {
        return Some(Panelled::F32(values));
    }
    if let Some((words, scales)) = head.int4_row_panels() {
        return Some(Panelled::Int4(words, scales));
    }
    let scales = match (head.format, head.channels) {
        (Format::Int8, Channels::Rows) => Scales::Rows(head.scales()),
        (Format::Int8, Channels::Cols) => Scales::Cols(head.scales()),
        _ => Scales::Tensor(*head.scales().first()?),
    };
    Some(Panelled::Int8(head.int8_row_panels()?, scales))
}

/// Whether a lifted f16 head's decode step runs [`f16c::head`](super::f16c::head):
/// F16C's copy runs and the rows are whole sixteens.
#[cfg(target_arch = "x86_64")]
fn f16c_head(n_embd: usize) -> bool {
    parallel::f16c() && n_embd.is_multiple_of(LANES)
}

/// [`part_here`] for a head of two weights a word (`words`: `(n, n_embd /
/// 2)`, n_embd even; f16 read raw with x scaled by [`raw_inputs`], or
/// widened; bf16). One row of x (a decode step) dots each row of words as
/// it widens them; more rows share one widening of each head row.
#[inline(always)]
fn pair_part<P: Pair>(
    x: &[f32],
    words: &[u32],
    pair: P,
    n_embd: usize,
    avx2: bool,
    out: &mut [f32],
) {
    let (h, n) = (n_embd / 2, words.len() / (n_embd / 2).max(1));
    let mut halves = vec![0.0; x.len()]; // (n_out, 2, n_embd / 2) x's even, odd elements
    for (xr, xh) in x.chunks_exact(n_embd).zip(halves.chunks_exact_mut(n_embd)) {
        split(xr, xh);
    }
    if halves.len() == n_embd {
        let (even, odd) = halves.split_at(h);
        for (v, o) in out.iter_mut().enumerate() {
            let row = v * h..(v + 1) * h;
            // The page's loop fetches the row 8 KiB on early (`fast::touch`);
            // native code leaves it to the core's prefetcher (with prefetch,
            // f16 decode one core 19–20 → 21 ms/token).
            #[cfg(target_arch = "wasm32")]
            super::touch::lines(words, row.clone());
            *o = dot_words(even, odd, &words[row], pair, avx2);
        }
        return;
    }
    let (mut lo, mut hi) = (vec![0.0; h], vec![0.0; h]); // (n_embd / 2) even, odd elements
    for (v, ws) in words.chunks_exact(h).enumerate() {
        for ((l, r), &word) in lo.iter_mut().zip(hi.iter_mut()).zip(ws) {
            (*l, *r) = pair.pair(word);
        }
        for (r, xh) in halves.chunks_exact(n_embd).enumerate() {
            let (even, odd) = xh.split_at(h);
            out[r * n + v] = dot_halves(even, odd, &lo, &hi);
        }
    }
}

/// [`dot_halves`] with the weights' halves taken from their words as they
/// are widened (never stored): the same lanes, the same sums. In wasm the
/// lanes are written as SIMD128 vectors (the compiler's own vectorisation of
/// this loop shuffled lane by lane and ran slower than widening first);
/// natively, with `avx2`, in AVX2 intrinsics ([`avx2::lane_sums`]).
#[inline(always)]
fn dot_words<P: Pair>(x_even: &[f32], x_odd: &[f32], words: &[u32], pair: P, avx2: bool) -> f32 {
    const HALF: usize = LANES / 2;
    #[cfg(target_arch = "wasm32")]
    let (mut even, mut odd) = simd128::lane_sums(x_even, x_odd, words, pair);
    // SAFETY: `avx2` only where the CPU has AVX2 (the caller checked).
    #[cfg(target_arch = "x86_64")]
    let avx2 = avx2.then(|| unsafe { avx2::lane_sums(x_even, x_odd, words, pair) });
    #[cfg(not(target_arch = "x86_64"))]
    let _ = avx2; // false: parallel::avx2 is x86-64's
    #[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
    let avx2: Option<([f32; HALF], [f32; HALF])> = None;
    #[cfg(not(target_arch = "wasm32"))]
    let (mut even, mut odd) = avx2.unwrap_or_else(|| {
        let (mut even, mut odd) = ([0.0f32; HALF], [0.0f32; HALF]);
        let chunks = x_even.chunks_exact(HALF).zip(x_odd.chunks_exact(HALF));
        for ((xe, xo), ws) in chunks.zip(words.chunks_exact(HALF)) {
            for j in 0..HALF {
                let (a, b) = pair.pair(ws[j]);
                even[j] += xe[j] * a;
                odd[j] += xo[j] * b;
            }
        }
        (even, odd)
    });
    let tail = x_even.len() / HALF * HALF;
    let rest = x_even[tail..].iter().zip(&x_odd[tail..]).zip(&words[tail..]);
    for (j, ((&xe, &xo), &w)) in rest.enumerate() {
        let (a, b) = pair.pair(w);
        even[j] += xe * a;
        odd[j] += xo * b;
    }
    let mut lanes = [0.0; LANES];
    for ((pair, e), o) in lanes.chunks_exact_mut(2).zip(even).zip(odd) {
        (pair[0], pair[1]) = (e, o);
    }
    combine(lanes)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use crate::storage::pair::Pair;

    /// The eight even and eight odd lanes of [`super::dot_words`] over the
    /// whole chunks of eight words, in AVX2 (the compiler's vectorisation of
    /// the portable loop moved lanes one by one: one core, a 50257 × 768
    /// head, 12.2 → 4.7 ms). Each lane's products added in order.
    #[target_feature(enable = "avx2")]
    pub fn lane_sums<P: Pair>(
        x_even: &[f32],
        x_odd: &[f32],
        words: &[u32],
        pair: P,
    ) -> ([f32; 8], [f32; 8]) {
        let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let chunks = x_even.chunks_exact(8).zip(x_odd.chunks_exact(8));
        for ((xe, xo), ws) in chunks.zip(words.chunks_exact(8)) {
            // SAFETY: eight of each are there (whole chunks), read unaligned.
            let (w, xe, xo) = unsafe {
                let w = _mm256_loadu_si256(ws.as_ptr().cast());
                (w, _mm256_loadu_ps(xe.as_ptr()), _mm256_loadu_ps(xo.as_ptr()))
            };
            // SAFETY: this function is compiled for AVX2.
            let (lo, hi) = unsafe { pair.pair8(w) };
            even = _mm256_add_ps(even, _mm256_mul_ps(xe, lo));
            odd = _mm256_add_ps(odd, _mm256_mul_ps(xo, hi));
        }
        let (mut e, mut o) = ([0.0f32; 8], [0.0f32; 8]);
        // SAFETY: eight floats each, written unaligned.
        unsafe {
            _mm256_storeu_ps(e.as_mut_ptr(), even);
            _mm256_storeu_ps(o.as_mut_ptr(), odd);
        }
        (e, o)
    }
}

#[cfg(target_arch = "wasm32")]
mod simd128 {
    use core::arch::wasm32::*;

    use crate::storage::pair::Pair;

    /// The eight even and eight odd lanes of [`super::dot_words`] over the
    /// whole chunks of eight words: each lane's products added in order.
    #[inline(always)]
    pub fn lane_sums<P: Pair>(
        x_even: &[f32],
        x_odd: &[f32],
        words: &[u32],
        pair: P,
    ) -> ([f32; 8], [f32; 8]) {
        let widen = |w: v128| pair.pair4(w);
        let load = |v: &[f32]| -> v128 { f32x4(v[0], v[1], v[2], v[3]) };
        let load_u = |v: &[u32]| -> v128 { u32x4(v[0], v[1], v[2], v[3]) };
        let [mut e0, mut e1, mut o0, mut o1] = [f32x4_splat(0.0); 4];
        let chunks = x_even.chunks_exact(8).zip(x_odd.chunks_exact(8));
        for ((xe, xo), ws) in chunks.zip(words.chunks_exact(8)) {
            let ((l0, h0), (l1, h1)) = (widen(load_u(&ws[..4])), widen(load_u(&ws[4..])));
            e0 = f32x4_add(e0, f32x4_mul(load(&xe[..4]), l0));
            e1 = f32x4_add(e1, f32x4_mul(load(&xe[4..]), l1));
            o0 = f32x4_add(o0, f32x4_mul(load(&xo[..4]), h0));
            o1 = f32x4_add(o1, f32x4_mul(load(&xo[4..]), h1));
        }
        let four = |v: v128| -> [f32; 4] {
            use f32x4_extract_lane as lane;
            [lane::<0>(v), lane::<1>(v), lane::<2>(v), lane::<3>(v)]
        };
        let lanes = |a: v128, b: v128| -> [f32; 8] {
            let (a, b) = (four(a), four(b));
            std::array::from_fn(|j| if j < 4 { a[j] } else { b[j - 4] })
        };
        (lanes(e0, e1), lanes(o0, o1))
    }
}

/// x · w as sixteen partial sums (lane j: the products k ≡ j mod 16, in
/// order of k) added pairwise. Not one running sum: its every add would wait
/// on the last (a 50,257-row head is then bound by add latency), while
/// sixteen independent lanes are four SIMD operations that do not.
#[inline(always)]
fn dot(x: &[f32], w: &[f32]) -> f32 {
    combine(lane_sums::<LANES>(x, w))
}

/// [`dot`] of x with an f16 row, both given as halves (even elements, odd
/// elements): element 2i is lane 2i mod 16 and element 2i + 1 lane 2i + 1
/// mod 16, so the same sums as `dot` on the whole rows, bit for bit.
#[inline(always)]
fn dot_halves(x_even: &[f32], x_odd: &[f32], w_even: &[f32], w_odd: &[f32]) -> f32 {
    let even = lane_sums::<{ LANES / 2 }>(x_even, w_even);
    let odd = lane_sums::<{ LANES / 2 }>(x_odd, w_odd);
    let mut lanes = [0.0; LANES];
    for ((pair, e), o) in lanes.chunks_exact_mut(2).zip(even).zip(odd) {
        (pair[0], pair[1]) = (e, o);
    }
    combine(lanes)
}

/// `L` partial sums of x · w: lane i adds the products k ≡ i (mod L), in order.
#[inline(always)]
fn lane_sums<const L: usize>(x: &[f32], w: &[f32]) -> [f32; L] {
    let mut lanes = [0.0f32; L];
    let (xs, ws) = (x.chunks_exact(L), w.chunks_exact(L));
    let (x_tail, w_tail) = (xs.remainder(), ws.remainder());
    for (xc, wc) in xs.zip(ws) {
        for ((l, &a), &b) in lanes.iter_mut().zip(xc).zip(wc) {
            *l += a * b;
        }
    }
    for ((l, &a), &b) in lanes.iter_mut().zip(x_tail).zip(w_tail) {
        *l += a * b;
    }
    lanes
}

/// The lanes added pairwise, in a fixed order.
#[inline(always)]
fn combine(l: [f32; LANES]) -> f32 {
    let quad = |i: usize| (l[i] + l[i + 1]) + (l[i + 2] + l[i + 3]);
    (quad(0) + quad(4)) + (quad(8) + quad(12))
}

//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

use std::ops::Range;

use super::matrix::{f16_pair, split, Matrix};
use super::{coworker, parallel};

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_out: u32,
    pub row0: u32,
    pub n_embd: u32,
    pub vocab_size: u32,
    /// First vocabulary row of this shard of the head (0 when unsplit).
    pub v0: u32,
    /// Vocabulary rows in this shard.
    pub n_vocab: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Partial sums of one dot product: lane j adds the products k ≡ j (mod 16).
const LANES: usize = 16;

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out, where
/// `lm_head` is the shard of rows `v0..v0 + lm_head.rows` of the head and
/// logits rows are `vocab_size` wide (the other shards write the rest). Each
/// dot product is [`dot`]'s: sixteen partial sums, the same in every format
/// and however the rows are shared among threads.
pub fn run_cpu(
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
    let parts = parallel::parts(n_vocab, n_vocab * n_embd * n_out, 1);
    let outs = parallel::map(parts.clone(), |vr| part(x, lm_head, vr));
    for (vr, o) in parts.into_iter().zip(outs) {
        for (r, pr) in o.chunks_exact(vr.len()).enumerate() {
            logits[r * vocab_size + v0 + vr.start..][..vr.len()].copy_from_slice(pr);
        }
    }
}

/// The logits of head rows `vr` for each row of `x`: `(n_out, vr.len())`.
fn part(x: &[f32], lm_head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { part_avx2(x, lm_head, vr) };
    }
    part_here(x, lm_head, vr)
}

/// [`part_here`] compiled for AVX2: the same loops, eight lanes wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn part_avx2(x: &[f32], lm_head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    part_here(x, lm_head, vr)
}

/// Row-outer: each packed row of the head is read once for all n_out rows.
#[inline(always)]
fn part_here(x: &[f32], lm_head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    let (n_embd, n) = (lm_head.cols, vr.len());
    let mut out = vec![0.0; x.len() / n_embd * n]; // (n_out, n)
    if let Some(words) = lm_head.f16_words() {
        let h = n_embd / 2;
        let mut halves = vec![0.0; x.len()]; // (n_out, 2, n_embd / 2) x's even, odd elements
        for (xr, xh) in x.chunks_exact(n_embd).zip(halves.chunks_exact_mut(n_embd)) {
            split(xr, xh);
        }
        // A row unpacked into its halves, then dotted: plain loops the
        // compiler vectorises (one fused loop over the words was not).
        let (mut lo, mut hi) = (vec![0.0; h], vec![0.0; h]); // (n_embd / 2) even, odd elements
        for (v, ws) in words[vr.start * h..vr.end * h].chunks_exact(h).enumerate() {
            for ((l, r), &word) in lo.iter_mut().zip(hi.iter_mut()).zip(ws) {
                (*l, *r) = f16_pair(word);
            }
            for (r, xh) in halves.chunks_exact(n_embd).enumerate() {
                let (even, odd) = xh.split_at(h);
                out[r * n + v] = dot_halves(even, odd, &lo, &hi);
            }
        }
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

/// Dispatch size: one thread per (token of the shard, row).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n_vocab.div_ceil(super::WG), p.n_out, 1]
}

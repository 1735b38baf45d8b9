//! `shaders/lm_head.wgsl`: logits of the wanted rows against the LM head.

use bytemuck::{Pod, Zeroable};

use super::matrix::{f16_pair, split, Matrix};

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

/// Partial sums of one dot product: lane j adds the products k ≡ j (mod 8).
const LANES: usize = 8;

/// logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]  for r < n_out, where
/// `lm_head` is the shard of rows `v0..v0 + lm_head.rows` of the head and
/// logits rows are `vocab_size` wide (the other shards write the rest). Each
/// dot product is [`dot`]'s: eight partial sums, the same in every format.
pub fn run_cpu(
    x: &[f32],        // (n_rows, n_embd)
    lm_head: &Matrix, // (n_vocab, n_embd) in its format: rows v0.. of the head
    v0: usize,
    vocab_size: usize,
    row0: usize,
    n_out: usize,
    logits: &mut [f32], // (n_out, vocab_size)
) {
    let n_embd = lm_head.cols;
    let x = &x[row0 * n_embd..][..n_out * n_embd]; // (n_out, n_embd) the wanted rows
    let mut out = |v: usize, r: usize, logit: f32| logits[r * vocab_size + v0 + v] = logit;
    // Row-outer: each packed row of the head is read once for all n_out rows.
    if let Some(words) = lm_head.f16_words() {
        let h = n_embd / 2;
        let mut halves = vec![0.0; x.len()]; // (n_out, 2, n_embd / 2) x's even, odd elements
        for (xr, xh) in x.chunks_exact(n_embd).zip(halves.chunks_exact_mut(n_embd)) {
            split(xr, xh);
        }
        // A row unpacked into its halves, then dotted: plain loops the
        // compiler vectorises (one fused loop over the words was not).
        let (mut lo, mut hi) = (vec![0.0; h], vec![0.0; h]); // (n_embd / 2) even, odd elements
        for (v, ws) in words.chunks_exact(h).enumerate() {
            for ((l, r), &word) in lo.iter_mut().zip(hi.iter_mut()).zip(ws) {
                (*l, *r) = f16_pair(word);
            }
            for (r, xh) in halves.chunks_exact(n_embd).enumerate() {
                let (even, odd) = xh.split_at(h);
                out(v, r, dot_halves(even, odd, &lo, &hi));
            }
        }
        return;
    }
    let mut buf = Vec::new();
    for v in 0..lm_head.rows {
        let wr = lm_head.row(v, &mut buf);
        for (r, xr) in x.chunks_exact(n_embd).enumerate() {
            out(v, r, dot(xr, wr));
        }
    }
}

/// x · w as eight partial sums (lane j: the products k ≡ j mod 8, in order of
/// k) added pairwise. Not one running sum: its every add would wait on the
/// last (a 50,257-row head is then bound by add latency), and eight
/// independent lanes are two SIMD operations.
pub fn dot(x: &[f32], w: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (xs, ws) = (x.chunks_exact(LANES), w.chunks_exact(LANES));
    let (x_tail, w_tail) = (xs.remainder(), ws.remainder());
    for (xc, wc) in xs.zip(ws) {
        for ((l, &a), &b) in lanes.iter_mut().zip(xc).zip(wc) {
            *l += a * b;
        }
    }
    for ((l, &a), &b) in lanes.iter_mut().zip(x_tail).zip(w_tail) {
        *l += a * b;
    }
    combine(lanes)
}

/// [`dot`] of x with an f16 row given both in halves (even elements, odd
/// elements): element 2i is lane 2i mod 8 and element 2i + 1 lane 2i + 1 mod 8,
/// so the same sums as `dot` on the whole rows, bit for bit.
fn dot_halves(x_even: &[f32], x_odd: &[f32], w_even: &[f32], w_odd: &[f32]) -> f32 {
    let (e, o) = (quarter_sums(x_even, w_even), quarter_sums(x_odd, w_odd));
    combine([e[0], o[0], e[1], o[1], e[2], o[2], e[3], o[3]])
}

/// Four partial sums of x · w: lane i adds the products k ≡ i (mod 4).
fn quarter_sums(x: &[f32], w: &[f32]) -> [f32; 4] {
    let mut lanes = [0.0f32; 4];
    let (xs, ws) = (x.chunks_exact(4), w.chunks_exact(4));
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
fn combine(l: [f32; LANES]) -> f32 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// Dispatch size: one thread per (token of the shard, row).
pub fn workgroups(p: &Params) -> [u32; 3] {
    [p.n_vocab.div_ceil(super::WG), p.n_out, 1]
}

//! A prefill's attention on the CPU: the twin's numbers
//! ([`attention::run_cpu`](crate::kernels::attention::run_cpu)) bit for
//! bit, with each head's keys first laid out across (`(head_size, keys)`),
//! so that sixteen keys' dot products are sixteen lanes of one vector
//! loaded in one piece. The twin scores a query against keys a cache row
//! apart, eight loads gathered one at a time per eight products; a
//! prefill's rows all score the same keys, so the layout is paid once per
//! head and part and used by every row. Each score is still summed in order
//! of d from −0.0 and then scaled, and the softmax weights ([`exp_sum`])
//! and each output's values in order of key ([`mix`]) are the twin's own
//! functions, kept here (the twin imports them), so the bits are the
//! twin's. One core of a Xeon with AMX, 124M, int8 × 8-bit activations:
//! 512-token prefill 1259 → 558 ms (attention was over half of it),
//! 64-token 66 → 62.

use crate::model::Heads;

/// Rows below which the layout costs more than it saves (it touches every
/// key once, as one row's scores do): a decode step keeps the twin.
pub const MIN_ROWS: usize = 4;

/// Keys in one vector of sums (AVX-512's sixteen lanes; AVX2 and SIMD128
/// take two and four vectors).
const LANES: usize = 16;

/// Keys scored side by side: four vectors' chains of adds in flight.
const WIDE: usize = 4 * LANES;

/// The twin's attention for the rows of `q` (`(rows, qkv_width)`, the
/// caller's slicing), the same bits; `y`: `(rows, n_embd)`. For
/// [`MIN_ROWS`] or more (fewer work, for less than they cost).
pub fn prefill(
    q: &[f32],           // (rows, n_embd + 2 * kv_dim)
    key_cache: &[f32],   // (n_positions, kv_dim)
    value_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32], // (rows, n_embd)
) {
    let pass = Pass { q, key_cache, value_cache, heads, keys0, scale };
    #[cfg(target_arch = "x86_64")]
    if super::parallel::wide_panels() {
        // SAFETY: the CPU has AVX-512 F and BW and AVX2 (`wide_panels` checks).
        return unsafe { prefill_avx512(&pass, y) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { prefill_avx2(&pass, y) };
    }
    prefill_here(&pass, y)
}

/// [`prefill`]'s inputs, handed to each compiled copy in one piece.
struct Pass<'a> {
    q: &'a [f32],           // (rows, n_embd + 2 * kv_dim)
    key_cache: &'a [f32],   // (n_positions, kv_dim)
    value_cache: &'a [f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
}

/// [`prefill_here`] compiled for AVX-512: the same loops, sixteen lanes wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn prefill_avx512(pass: &Pass, y: &mut [f32]) {
    prefill_here(pass, y)
}

/// [`prefill_here`] compiled for AVX2: the same loops, eight lanes wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn prefill_avx2(pass: &Pass, y: &mut [f32]) {
    prefill_here(pass, y)
}

#[inline(always)]
fn prefill_here(pass: &Pass, y: &mut [f32]) {
    let Pass { q, key_cache, value_cache, heads, keys0, scale } = *pass;
    let Heads { n_embd, head_size, .. } = heads;
    let (kv_dim, width) = (heads.kv_dim(), heads.qkv_width());
    let n_all = keys0 + q.len() / width; // keys the last row attends to
    let stride = n_all.next_multiple_of(LANES);
    let mut keys = vec![0.0f32; head_size * stride]; // (head_size, stride) one K/V head's keys, across
    let mut att = vec![0.0f32; stride]; // (stride) one row's scores, then weights
    let mut held = None; // the K/V head `keys` holds (a group's query heads share it)
    for (h, h0) in (0..n_embd).step_by(head_size).enumerate() {
        let k0 = heads.kv0(h);
        if held != Some(k0) {
            across(key_cache, kv_dim, k0, n_all, stride, &mut keys);
            held = Some(k0);
        }
        for (row, r) in q.chunks_exact(width).enumerate() {
            let n_keys = keys0 + row + 1;
            scores(&r[h0..][..head_size], &keys, stride, n_keys, scale, &mut att);
            let sum = exp_sum(&mut att[..n_keys]);
            let out = &mut y[row * n_embd + h0..][..head_size];
            mix_wide(&att[..n_keys], sum, value_cache, kv_dim, k0, out);
        }
    }
}

/// `keys[d, j] = key_cache[j, k0 + d]` for the first `n_all` slots.
#[inline(always)]
fn across(
    key_cache: &[f32], // (n_positions, kv_dim)
    kv_dim: usize,
    k0: usize,
    n_all: usize,
    stride: usize,
    keys: &mut [f32], // (head_size, stride)
) {
    let head_size = keys.len() / stride;
    for j in 0..n_all {
        let key = &key_cache[j * kv_dim + k0..][..head_size];
        for (d, &k) in key.iter().enumerate() {
            keys[d * stride + j] = k;
        }
    }
}

/// `att[j] = (q · k_j) · scale` for keys `0..n_keys` (and a few padding
/// lanes past them, which nobody reads), each dot product in order of d.
#[inline(always)]
fn scores(
    q: &[f32],    // (head_size)
    keys: &[f32], // (head_size, stride)
    stride: usize,
    n_keys: usize,
    scale: f32,
    att: &mut [f32], // (stride)
) {
    let wide = n_keys / WIDE * WIDE;
    for j0 in (0..wide).step_by(WIDE) {
        block::<WIDE>(q, keys, stride, j0, scale, att);
    }
    // The rest in one block of one, two or three vectors (or four, short
    // of a whole one): its chains side by side too.
    match (n_keys - wide).div_ceil(LANES) {
        0 => {}
        1 => block::<LANES>(q, keys, stride, wide, scale, att),
        2 => block::<{ 2 * LANES }>(q, keys, stride, wide, scale, att),
        3 => block::<{ 3 * LANES }>(q, keys, stride, wide, scale, att),
        _ => block::<WIDE>(q, keys, stride, wide, scale, att),
    }
}

/// Scores of keys `j0..j0 + N`, each summed from −0.0 in order of d, as
/// `attention::weights` sums them.
#[inline(always)]
fn block<const N: usize>(
    q: &[f32],
    keys: &[f32],
    stride: usize,
    j0: usize,
    scale: f32,
    att: &mut [f32],
) {
    let acc = dots::<N>([-0.0; N], q, &keys[j0..], stride);
    let att: &mut [f32; N] = (&mut att[j0..][..N]).try_into().expect("N scores");
    for l in 0..N {
        att[l] = acc[l] * scale;
    }
}

/// `acc[l] + Σ_d q[d] · keys[d · stride + l]`, in order of d.
#[inline(always)]
fn dots<const N: usize>(acc: [f32; N], q: &[f32], keys: &[f32], stride: usize) -> [f32; N] {
    // Sums in and out by value, indexed loops: written in place, they
    // lived on the stack, a store and a load per add.
    let mut acc = acc;
    for (d, &qd) in q.iter().enumerate() {
        let k: &[f32; N] = keys[d * stride..][..N].try_into().expect("N keys");
        for l in 0..N {
            acc[l] += qd * k[l];
        }
    }
    acc
}

/// [`mix`]'s numbers, `WIDE` of a head's outputs at a time in registers
/// (`mix` adds each value row into `out` in memory: a load and a store per
/// add).
#[inline(always)]
fn mix_wide(
    att: &[f32],         // (n_keys) unnormalised weights
    sum: f32,            // their sum
    value_cache: &[f32], // (n_positions, kv_dim)
    kv_dim: usize,
    k0: usize,
    out: &mut [f32], // (head_size)
) {
    let whole = out.len() / WIDE * WIDE;
    for d0 in (0..whole).step_by(WIDE) {
        let mut acc = [0.0f32; WIDE];
        for (j, &a) in att.iter().enumerate() {
            let v: &[f32; WIDE] =
                value_cache[j * kv_dim + k0 + d0..][..WIDE].try_into().expect("WIDE");
            for l in 0..WIDE {
                acc[l] += a / sum * v[l];
            }
        }
        out[d0..][..WIDE].copy_from_slice(&acc);
    }
    // A head size past a multiple of WIDE (GPT-2's is 64): the twin's loop.
    if whole < out.len() {
        mix(att, sum, value_cache, kv_dim, k0 + whole, &mut out[whole..]);
    }
}

/// Scores `att` to unnormalised softmax weights `exp(a − max)`, in place;
/// returns their sum in order of j: the twin's (`attention::weights`),
/// here so that both use one definition.
#[inline(always)] // into this file's AVX-512 and AVX2 copies
pub fn exp_sum(att: &mut [f32]) -> f32 {
    // Subtract the max so exp() cannot overflow; `fast::exp`, the same bits
    // natively and in wasm (the platform's differs in the last bit), in its
    // own loop so it vectorises, then summed in order.
    let max = att.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for a in att.iter_mut() {
        *a = crate::fast::exp::exp(*a - max);
    }
    att.iter().sum()
}

/// `out = Σ_j (att[j] / sum) · v_j` in order of j from 0.0, v_j the value
/// row of slot j in the K/V head at column `k0`: the twin's
/// (`attention::run_cpu`) mix, here so that both use one definition.
#[inline(always)] // into this file's AVX-512 and AVX2 copies
pub fn mix(
    att: &[f32],         // (n_keys) unnormalised weights
    sum: f32,            // their sum
    value_cache: &[f32], // (n_positions, kv_dim)
    kv_dim: usize,
    k0: usize,
    out: &mut [f32], // (head_size)
) {
    let head_size = out.len();
    out.fill(0.0);
    for (j, a) in att.iter().enumerate() {
        let v = &value_cache[j * kv_dim + k0..][..head_size];
        for (o, vv) in out.iter_mut().zip(v) {
            *o += a / sum * vv;
        }
    }
}

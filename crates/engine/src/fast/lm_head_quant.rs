//! The CPU engine's LM head over a head in bf16, int8 (per row or per
//! tensor) or int4, for one row of x (a decode step, or a prefill's last
//! row): each weight decoded in a register from its word as it is
//! multiplied, never stored. Each dot product is the twin's sixteen lanes
//! (lane j adds the products k ≡ j mod 16 in order of k), each weight the
//! value the twin computes with ([`Format::load`]), so the bits are the twin's.

use std::ops::Range;

use super::lm_head::{combine, LANES};
use crate::storage::format::{Channels, Format, GROUP};
use crate::storage::matrix::Matrix;

/// The logits of head rows `vr` for the one row `x`, if the head's format
/// and layout have a path here (`None`: use the general one).
#[inline(always)]
pub fn part(x: &[f32], head: &Matrix, vr: Range<usize>) -> Option<Vec<f32>> {
    let n_embd = head.cols;
    let rows = vr.clone().map(|v| v * n_embd..(v + 1) * n_embd);
    let scales = head.scales();
    Some(match head.format {
        Format::Int8PerTensor | Format::Int8
            if head.channels == Channels::Rows || head.format == Format::Int8PerTensor =>
        {
            let q: &[i8] = bytemuck::cast_slice(head.words()); // (rows, n_embd) the fields
            let scale = |v: usize| if head.format == Format::Int8 { scales[v] } else { scales[0] };
            rows.zip(vr).map(|(r, v)| dot_int8(x, &q[r], scale(v))).collect()
        }
        Format::Int4 if n_embd.is_multiple_of(GROUP) => {
            let bytes: &[u8] = bytemuck::cast_slice(head.words()); // (rows, n_embd / 2)
            let (x_even, x_odd) = halves(x);
            let row = |r: Range<usize>| {
                (&bytes[r.start / 2..r.end / 2], &scales[r.start / GROUP..r.end / GROUP])
            };
            rows.map(|r| dot_int4(&x_even, &x_odd, row(r))).collect()
        }
        Format::Bf16 if n_embd.is_multiple_of(2) => {
            let (x_even, x_odd) = halves(x);
            rows.map(|r| dot_bf16(&x_even, &x_odd, &head.words()[r.start / 2..r.end / 2])).collect()
        }
        _ => return None,
    })
}

/// x's even and odd elements.
fn halves(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    (x.iter().step_by(2).copied().collect(), x.iter().skip(1).step_by(2).copied().collect())
}

/// x · (q · scale) in the twin's lanes.
#[inline(always)]
fn dot_int8(x: &[f32], q: &[i8], scale: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (xs, qs) = (x.chunks_exact(LANES), q.chunks_exact(LANES));
    let (x_tail, q_tail) = (xs.remainder(), qs.remainder());
    for (xc, qc) in xs.zip(qs) {
        for j in 0..LANES {
            lanes[j] += xc[j] * (f32::from(qc[j]) * scale);
        }
    }
    for ((l, &a), &b) in lanes.iter_mut().zip(x_tail).zip(q_tail) {
        *l += a * (f32::from(b) * scale);
    }
    combine(lanes)
}

/// x · w for an int4 row (byte b: elements 2b, low nibble, and 2b + 1; a
/// scale per [`GROUP`] elements, the row a whole number of groups), x given
/// as its halves: element 2i in lane 2i mod 16, 2i + 1 in the next.
#[inline(always)]
fn dot_int4(x_even: &[f32], x_odd: &[f32], (bytes, scales): (&[u8], &[f32])) -> f32 {
    const HALF: usize = LANES / 2;
    let (mut even, mut odd) = ([0.0f32; HALF], [0.0f32; HALF]);
    let groups = bytes.chunks_exact(GROUP / 2).zip(scales);
    for (g, (group, &s)) in groups.enumerate() {
        for (c, bs) in group.chunks_exact(HALF).enumerate() {
            let at = g * GROUP / 2 + c * HALF;
            let (xe, xo) = (&x_even[at..][..HALF], &x_odd[at..][..HALF]);
            for j in 0..HALF {
                even[j] += xe[j] * (f32::from(((bs[j] << 4) as i8) >> 4) * s);
                odd[j] += xo[j] * (f32::from((bs[j] as i8) >> 4) * s);
            }
        }
    }
    interleave(even, odd)
}

/// x · w for a bf16 row (word i: elements 2i, low half, and 2i + 1), x given as its halves.
#[inline(always)]
fn dot_bf16(x_even: &[f32], x_odd: &[f32], words: &[u32]) -> f32 {
    const HALF: usize = LANES / 2;
    let (mut even, mut odd) = ([0.0f32; HALF], [0.0f32; HALF]);
    let chunks = x_even.chunks_exact(HALF).zip(x_odd.chunks_exact(HALF));
    for ((xe, xo), ws) in chunks.zip(words.chunks_exact(HALF)) {
        for j in 0..HALF {
            even[j] += xe[j] * f32::from_bits(ws[j] << 16);
            odd[j] += xo[j] * f32::from_bits(ws[j] & 0xffff_0000);
        }
    }
    let tail = words.len() / HALF * HALF;
    let rest = x_even[tail..].iter().zip(&x_odd[tail..]).zip(&words[tail..]);
    for (j, ((&xe, &xo), &w)) in rest.enumerate() {
        even[j] += xe * f32::from_bits(w << 16);
        odd[j] += xo * f32::from_bits(w & 0xffff_0000);
    }
    interleave(even, odd)
}

/// The sixteen lanes from their even and odd halves, combined as the twin does.
#[inline(always)]
fn interleave(even: [f32; LANES / 2], odd: [f32; LANES / 2]) -> f32 {
    let mut lanes = [0.0; LANES];
    for ((pair, e), o) in lanes.chunks_exact_mut(2).zip(even).zip(odd) {
        (pair[0], pair[1]) = (e, o);
    }
    combine(lanes)
}

//! The CPU engine's decode step over a matrix in bf16, int8 (per channel or
//! per tensor) or int4: each weight decoded in a register from its word as
//! it is multiplied, never stored, eight rows of the matrix through each
//! output at once. Every output still starts from its bias and adds its k
//! products one by one in order 0..k, each weight the value the twin
//! computes with ([`Format::load`]: the field times its scale), so the bits
//! are the twin's. A prefill (more rows of x) unpacks each row of the matrix
//! once for all of them instead ([`Matrix::row_part`]).

use std::ops::Range;

use crate::storage::format::{Channels, Format, GROUP};
use crate::storage::matrix::{split, Matrix};

// The words are read as bytes: element t of a word is its byte t (int8) or
// nibble t (int4) only on a little-endian machine (x86-64, wasm32, ARM).
const _: () = assert!(cfg!(target_endian = "little"));

/// `out = x @ w + bias` for columns `c` of `w` (`bias`, `out`: those
/// columns) and one row of x (a decode step), if `w`'s format and layout
/// have a path here; false (nothing written) otherwise.
#[inline(always)]
pub fn run(
    x: &[f32], // (k)
    w: &Matrix,
    c: Range<usize>,
    bias: &[f32],    // (c.len())
    out: &mut [f32], // (c.len())
) -> bool {
    let whole_groups = [w.cols, c.start, c.len()].iter().all(|v| v.is_multiple_of(GROUP));
    match w.format {
        Format::Int8PerTensor => int8(x, w, c, bias, out),
        Format::Int8 if w.channels == Channels::Cols => int8(x, w, c, bias, out),
        Format::Int4 if whole_groups => halves_apart(bias, out, |e, o| int4(x, w, c, e, o)),
        Format::Bf16 if whole_groups => halves_apart(bias, out, |e, o| bf16(x, w, c, e, o)),
        _ => return false,
    }
    true
}

/// Rows of the matrix that go through each output at once.
const ROWS: usize = 8;

/// Calls `add(kk, true)` for rows `kk..kk + ROWS` while eight remain, then
/// `add(kk, false)` for each row left: each output's products stay in order of k.
#[inline(always)]
fn in_order(k: usize, mut add: impl FnMut(usize, bool)) {
    let mut kk = 0;
    while kk + ROWS <= k {
        add(kk, true);
        kk += ROWS;
    }
    for kk in kk..k {
        add(kk, false);
    }
}

/// `f` of rows `kk..kk + ROWS`.
#[inline(always)]
fn eight<T>(kk: usize, f: impl Fn(usize) -> T) -> [T; ROWS] {
    std::array::from_fn(|i| f(kk + i))
}

/// int8: `w = q · scale`, the scale per column (or one for the matrix).
#[inline(always)]
fn int8(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (n, cols) = (w.cols, c.len());
    let q: &[i8] = bytemuck::cast_slice(w.words()); // (k, n) the fields
    let per_tensor: Vec<f32>; // (cols) the matrix's one scale, per column
    let scales = match w.format {
        Format::Int8PerTensor => {
            per_tensor = vec![w.scales().first().copied().unwrap_or(0.0); cols];
            &per_tensor[..]
        }
        _ => &w.scales()[c.clone()],
    };
    out.copy_from_slice(bias);
    let row = |r: usize| &q[r * n + c.start..][..cols];
    in_order(x.len(), |kk, all| match all {
        true => add_int8(out, eight(kk, |r| x[r]), eight(kk, row), scales),
        false => add_int8(out, [x[kk]], [row(kk)], scales),
    });
}

/// out[j] += xv[i] · (rows[i][j] · scales[j]) for i in order.
#[inline(always)]
fn add_int8<const N: usize>(out: &mut [f32], xv: [f32; N], rows: [&[i8]; N], scales: &[f32]) {
    let width = out.len();
    let (scales, rows) = (&scales[..width], rows.map(|r| &r[..width]));
    for j in 0..width {
        let mut o = out[j];
        for i in 0..N {
            o += xv[i] * (f32::from(rows[i][j]) * scales[j]);
        }
        out[j] = o;
    }
}

/// int4: `w = q · scale`, a scale per [`GROUP`] weights of a row; byte b of
/// a row holds columns 2b (low nibble) and 2b + 1 (high nibble).
#[inline(always)]
fn int4(x: &[f32], w: &Matrix, c: Range<usize>, even: &mut [f32], odd: &mut [f32]) {
    let (n, cols) = (w.cols, c.len());
    let bytes: &[u8] = bytemuck::cast_slice(w.words()); // (k, n / 2) two fields each
    let row = |r: usize| {
        let at = r * n + c.start;
        (&bytes[at / 2..][..cols / 2], &w.scales()[at / GROUP..][..cols / GROUP])
    };
    in_order(x.len(), |kk, all| match all {
        true => add_int4(even, odd, eight(kk, |r| x[r]), eight(kk, row)),
        false => add_int4(even, odd, [x[kk]], [row(kk)]),
    });
}

/// even[j], odd[j] += xv[i] · (low, high nibble of rows[i].0[j] · its group's scale).
#[inline(always)]
fn add_int4<const N: usize>(
    even: &mut [f32],
    odd: &mut [f32],
    xv: [f32; N],
    rows: [(&[u8], &[f32]); N],
) {
    const HALF: usize = GROUP / 2;
    let groups = even.chunks_exact_mut(HALF).zip(odd.chunks_exact_mut(HALF));
    for (g, (even, odd)) in groups.enumerate() {
        let scale: [f32; N] = std::array::from_fn(|i| rows[i].1[g]);
        let fields: [&[u8]; N] = std::array::from_fn(|i| &rows[i].0[g * HALF..][..HALF]);
        for j in 0..HALF {
            let (mut e, mut o) = (even[j], odd[j]);
            for i in 0..N {
                let b = fields[i][j];
                e += xv[i] * (f32::from(((b << 4) as i8) >> 4) * scale[i]);
                o += xv[i] * (f32::from((b as i8) >> 4) * scale[i]);
            }
            (even[j], odd[j]) = (e, o);
        }
    }
}

/// bf16: the top halves of f32s, two a word (column 2j low, 2j + 1 high).
#[inline(always)]
fn bf16(x: &[f32], w: &Matrix, c: Range<usize>, even: &mut [f32], odd: &mut [f32]) {
    let (n, h) = (w.cols, c.len() / 2);
    let row = |r: usize| &w.words()[(r * n + c.start) / 2..][..h];
    in_order(x.len(), |kk, all| match all {
        true => add_bf16(even, odd, eight(kk, |r| x[r]), eight(kk, row)),
        false => add_bf16(even, odd, [x[kk]], [row(kk)]),
    });
}

/// even[j], odd[j] += xv[i] · (low, high half of rows[i][j]).
#[inline(always)]
fn add_bf16<const N: usize>(even: &mut [f32], odd: &mut [f32], xv: [f32; N], rows: [&[u32]; N]) {
    let h = even.len();
    let (odd, rows) = (&mut odd[..h], rows.map(|r| &r[..h]));
    for j in 0..h {
        let (mut e, mut o) = (even[j], odd[j]);
        for i in 0..N {
            let word = rows[i][j];
            e += xv[i] * f32::from_bits(word << 16);
            o += xv[i] * f32::from_bits(word & 0xffff_0000);
        }
        (even[j], odd[j]) = (e, o);
    }
}

/// `out = bias` plus what `add` adds to the outputs kept with even and odd
/// columns apart (so that a word's two fields land in two plain vectors),
/// then interleaved back.
#[inline(always)]
fn halves_apart(bias: &[f32], out: &mut [f32], add: impl FnOnce(&mut [f32], &mut [f32])) {
    let mut acc = vec![0.0; out.len()]; // (2, cols / 2) outputs, halves apart
    split(bias, &mut acc);
    let (even, odd) = acc.split_at_mut(out.len() / 2);
    add(even, odd);
    for ((o, &e), &d) in out.chunks_exact_mut(2).zip(&*even).zip(&*odd) {
        (o[0], o[1]) = (e, d);
    }
}

//! The CPU engine's decode step over a matrix in bf16, int8 (per channel or
//! per tensor) or int4: each weight decoded in a register from its word as
//! it is multiplied, never stored, eight rows of the matrix through each
//! output at once (one core of this project's machine, 124M shape: int8 64 →
//! 27 ms/token, int4 43 → 26, bf16 36 → 30; in AVX-512, `quant_avx512`: int8
//! 19, int4 14; on an AVX2-only core, `quant_avx2`, against f16's 23.7:
//! int8 27 → 17, int4 26 → 18). Every output still starts from its bias and adds its k
//! products one by one in order 0..k, each weight the value the twin
//! computes with ([`Format::load`]: the field times its scale), so the bits
//! are the twin's. A prefill (more rows of x) unpacks each row of the matrix
//! once for all of them instead ([`Matrix::row_part`]).

use std::ops::Range;

use super::matmul_panels::K_BLOCK;
use super::matmul_panels_f32::prefill_block;
use crate::storage::format::{int4_weights, Channels, Format, GROUP};
use crate::storage::matrix::{split, Matrix};
use crate::storage::pair::{Bf16, Pair};
use crate::storage::panels::PANEL;

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
    let whole_groups = whole_groups(w, &c);
    let bytes = w.format == Format::Int8PerTensor
        || (w.format == Format::Int8 && w.channels == Channels::Cols);
    // AVX-512 where the CPU has it (parallel::avx512), in whole registers.
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx512() {
        use super::quant_avx512::{int4_matmul, int8_matmul};
        // SAFETY (both): the CPU has AVX-512 F (just checked).
        if bytes && c.len().is_multiple_of(16) {
            unsafe { int8_matmul(x, w, c, bias, out) };
            return true;
        }
        if w.format == Format::Int4 && whole_groups {
            unsafe { int4_matmul(x, w, c, bias, out) };
            return true;
        }
    }
    // AVX2's own kernels elsewhere on x86-64 (parallel::avx2).
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx2() {
        use super::quant_avx2::{int4_matmul, int8_matmul};
        // SAFETY (both): the CPU has AVX2 (just checked).
        if bytes && c.len().is_multiple_of(8) {
            unsafe { int8_matmul(x, w, c, bias, out) };
            return true;
        }
        if w.format == Format::Int4 && whole_groups {
            unsafe { int4_matmul(x, w, c, bias, out) };
            return true;
        }
    }
    #[cfg(target_arch = "wasm32")]
    if w.format == Format::Int4 && whole_groups {
        super::quant_simd128::int4_matmul(x, w, c, bias, out);
        return true;
    }
    match w.format {
        _ if bytes => int8(x, w, c, bias, out),
        Format::Int4 if whole_groups => int4(x, w, c, bias, out),
        Format::Bf16 if whole_groups => bf16(x, w, c, bias, out),
        _ => return false,
    }
    true
}

/// Rows of the matrix that go through each output at once.
const ROWS: usize = 8;

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
    // Plain loops, no closure handed down: inside the AVX2 copy of the
    // kernel a call the compiler does not inline runs without AVX2.
    let mut kk = 0;
    while kk + ROWS <= x.len() {
        add_int8(out, eight(kk, |r| x[r]), eight(kk, row), scales);
        kk += ROWS;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_int8(out, [xk], [row(kk)], scales);
    }
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

/// int4: `w = q · scale`, a scale per [`GROUP`] weights of a row; word j
/// of a row holds columns 8j..8j + 8 (column 8j + t in bits 4t..4t + 4).
#[inline(always)]
fn int4(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let row = |r: usize| w.int4_part(r, c.clone());
    out.copy_from_slice(bias);
    let mut kk = 0;
    while kk + ROWS <= x.len() {
        add_int4(out, eight(kk, |r| x[r]), eight(kk, row));
        kk += ROWS;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_int4(out, [xk], [row(kk)]);
    }
}

/// out[8j + t] += xv[i] · (field t of rows[i].0[j] · its group's scale):
/// each word's eight fields are eight lanes, each shifted by its own count.
#[inline(always)]
fn add_int4<const N: usize>(out: &mut [f32], xv: [f32; N], rows: [(&[u32], &[f32]); N]) {
    const WORDS: usize = GROUP / 8;
    for (g, out) in out.chunks_exact_mut(GROUP).enumerate() {
        let scale: [f32; N] = std::array::from_fn(|i| rows[i].1[g]);
        let words: [&[u32]; N] = std::array::from_fn(|i| &rows[i].0[g * WORDS..][..WORDS]);
        for (j, out) in out.chunks_exact_mut(8).enumerate() {
            // The word's eight outputs in a register for all N rows: lanes t.
            let mut acc: [f32; 8] = std::array::from_fn(|t| out[t]);
            for i in 0..N {
                let w = int4_weights(words[i][j], scale[i]);
                for (a, w) in acc.iter_mut().zip(w) {
                    *a += xv[i] * w;
                }
            }
            out.copy_from_slice(&acc);
        }
    }
}

/// bf16: the top halves of f32s, two a word (column 2j low, 2j + 1 high),
/// the outputs kept with even and odd columns apart (so that a word's two
/// halves land in two plain vectors), then interleaved back.
#[inline(always)]
fn bf16(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (n, h) = (w.cols, c.len() / 2);
    let row = |r: usize| &w.words()[(r * n + c.start) / 2..][..h];
    let mut acc = vec![0.0; out.len()]; // (2, cols / 2) outputs, halves apart
    split(bias, &mut acc);
    let (even, odd) = acc.split_at_mut(h);
    let mut kk = 0;
    while kk + ROWS <= x.len() {
        add_bf16(even, odd, eight(kk, |r| x[r]), eight(kk, row));
        kk += ROWS;
    }
    for (kk, &xk) in x.iter().enumerate().skip(kk) {
        add_bf16(even, odd, [xk], [row(kk)]);
    }
    for ((o, &e), &d) in out.chunks_exact_mut(2).zip(&*even).zip(&*odd) {
        (o[0], o[1]) = (e, d);
    }
}

/// even[j], odd[j] += xv[i] · (low, high half of rows[i][j]).
#[inline(always)]
fn add_bf16<const N: usize>(even: &mut [f32], odd: &mut [f32], xv: [f32; N], rows: [&[u32]; N]) {
    let h = even.len();
    let (odd, rows) = (&mut odd[..h], rows.map(|r| &r[..h]));
    for j in 0..h {
        let (mut e, mut o) = (even[j], odd[j]);
        for i in 0..N {
            let (lo, hi) = Bf16.pair(rows[i][j]);
            e += xv[i] * lo;
            o += xv[i] * hi;
        }
        (even[j], odd[j]) = (e, o);
    }
}

/// `out = x @ w + bias` for columns `c` (whole panels) of an int8 matrix in
/// column panels ([`Matrix::into_panels`]) and any rows of x: each panel's
/// k rows are one stream of bytes, its outputs in registers for all of k;
/// each output from its bias adds its k products in order, as the twin. A
/// decode step decodes each weight as it multiplies it; a prefill decodes a
/// panel a block of rows at a time ([`Format::load`]'s values, in L1) for
/// all its rows of x.
#[inline(always)]
pub fn int8_panels(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, cols) = (w.rows, c.len());
    // (n / PANEL, k, PANEL) the panels' bytes
    let q: &[i8] = bytemuck::cast_slice(w.int8_panels().unwrap_or_default());
    // (cols) the columns' scales; the matrix's one, per column, for int8-tensor.
    let scales: std::borrow::Cow<[f32]> = match w.format {
        Format::Int8PerTensor => vec![w.scales().first().copied().unwrap_or(0.0); cols].into(),
        _ => w.scales()[c.clone()].into(),
    };
    let q = &q[c.start * k..][..cols * k]; // (cols / PANEL, k, PANEL) the parts' panels
    if x.len() > k {
        return int8_prefill(x, q, &scales, bias, out);
    }
    #[cfg(target_arch = "x86_64")]
    if super::parallel::wide_panels() {
        // SAFETY: the CPU has AVX-512 F (`wide_panels` checked).
        return unsafe { super::quant_avx512::int8_panels(x, q, &scales, bias, out) };
    }
    for (p, (s, b)) in scales.chunks_exact(PANEL).zip(bias.chunks_exact(PANEL)).enumerate() {
        let panel = &q[p * k * PANEL..][..k * PANEL]; // (k, PANEL)
        let o = &mut out[p * PANEL..][..PANEL];
        #[cfg(target_arch = "x86_64")]
        if super::parallel::avx2() {
            // SAFETY: the CPU has AVX2 (just checked).
            unsafe { super::quant_avx2::int8_panel(x, panel, s, b, o) };
            continue;
        }
        int8_panel(x, panel, s, b, o);
    }
}

/// [`int8_panels`] for a prefill (`q`: the parts' panels, `(cols / PANEL, k,
/// PANEL)`; `scales`, `bias`: `(cols)`; `out`: `(m, cols)`): each panel
/// decoded [`K_BLOCK`] rows at a time into L1 and every row of x sent
/// through the block, its sums carried from block to block (where decoding
/// a whole panel first streamed up to 384 KB from L2 per row of x).
#[inline(always)]
fn int8_prefill(x: &[f32], q: &[i8], scales: &[f32], bias: &[f32], out: &mut [f32]) {
    let (cols, m) = (bias.len(), out.len() / bias.len());
    let k = x.len() / m;
    let mut block = Vec::with_capacity(K_BLOCK * PANEL); // (≤ K_BLOCK, PANEL) decoded rows
    let mut sums = vec![[0.0; PANEL]; m]; // (m, PANEL) one panel's outputs
    let parts =
        q.chunks_exact(k * PANEL).zip(scales.chunks_exact(PANEL)).zip(bias.chunks_exact(PANEL));
    for (p, ((panel, s), b)) in parts.enumerate() {
        sums.fill(b.try_into().expect("PANEL biases"));
        for (kb, rows) in panel.chunks(K_BLOCK * PANEL).enumerate() {
            block.clear();
            for row in rows.chunks_exact(PANEL) {
                block.extend(row.iter().zip(s).map(|(&q, &s)| f32::from(q) * s));
            }
            prefill_block(&mut sums, x, k, kb * K_BLOCK, &block);
        }
        for (acc, or) in sums.iter().zip(out.chunks_exact_mut(cols)) {
            or[p * PANEL..][..PANEL].copy_from_slice(acc);
        }
    }
}

/// Whether columns `c` of `w` are whole groups of `GROUP` columns (and so
/// are `w`'s rows): what the int4 and bf16 paths here take.
#[inline(always)]
pub fn whole_groups(w: &Matrix, c: &Range<usize>) -> bool {
    [w.cols, c.start, c.len()].iter().all(|v| v.is_multiple_of(GROUP))
}

/// A prefill over a row-major int4 matrix (columns `c`, whole groups; `bias`:
/// `(c.len())`, `out`: `(m, c.len())`), as [`int8_prefill`]: each group of
/// columns is a panel, its rows decoded [`K_BLOCK`] at a time into L1 (each
/// weight the twin's field times scale) and every row of x sent through
/// them, its sums carried from block to block. The row-major loop unpacked
/// every row once per sixteen rows of x and loaded and stored each output
/// once per four products.
#[inline(always)]
pub fn int4_prefill(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    const _: () = assert!(GROUP == PANEL, "a group's columns are a panel");
    let (k, cols) = (w.rows, c.len());
    let mut block = vec![0.0; K_BLOCK * PANEL]; // (K_BLOCK, PANEL) decoded rows
    let mut sums = vec![[0.0; PANEL]; out.len() / cols]; // (m, PANEL) one group's outputs
    for (p, b) in bias.chunks_exact(GROUP).enumerate() {
        let group = c.start + p * GROUP..c.start + (p + 1) * GROUP;
        sums.fill(b.try_into().expect("GROUP biases"));
        for kb in (0..k).step_by(K_BLOCK) {
            let rows = (k - kb).min(K_BLOCK);
            for (r, o) in (kb..kb + rows).zip(block.chunks_exact_mut(PANEL)) {
                let (words, scale) = w.int4_part(r, group.clone());
                for (o, &word) in o.chunks_exact_mut(8).zip(words) {
                    o.copy_from_slice(&int4_weights(word, scale[0]));
                }
            }
            prefill_block(&mut sums, x, k, kb, &block[..rows * PANEL]);
        }
        for (acc, or) in sums.iter().zip(out.chunks_exact_mut(cols)) {
            or[p * GROUP..][..GROUP].copy_from_slice(acc);
        }
    }
}

/// One panel's outputs for one row of x: `o[j] = b[j] + Σ_r x[r] · (panel[r, j] · s[j])`.
#[inline(always)]
fn int8_panel(x: &[f32], panel: &[i8], s: &[f32], b: &[f32], o: &mut [f32]) {
    let mut acc: [f32; PANEL] = std::array::from_fn(|j| b[j]);
    for (&xr, row) in x.iter().zip(panel.chunks_exact(PANEL)) {
        for ((a, &q), &s) in acc.iter_mut().zip(row).zip(s) {
            *a += xr * (f32::from(q) * s);
        }
    }
    o.copy_from_slice(&acc);
}

//! int8 weights times 8-bit activations: the CPU engine's integer dot
//! products (`--activations int8`), as llama.cpp multiplies its Q8_0 weights.
//!
//! The f32 path decodes every weight to f32 and multiplies it by an f32
//! input: four float operations a weight, whatever the weight's size, so on
//! a core without AVX-512 int8 decodes barely faster than f16. Here each
//! row of x is first quantised in blocks of [`BLOCK`] inputs (a scale
//! `d = max|x| / 127` a block, as Q8_0), and a block's products are summed
//! as integers (AVX2: 32 products in five instructions, from the matrix's
//! quad panels, [`quads`](crate::storage::quads); a prefill on a CPU with
//! AMX: 8,192 in one tile instruction). The results are not the
//! f32 path's (x is rounded to 8 bits): a named option with its own quality
//! figures (`tests/formats.rs`), never a silent change to a format, and
//! the GPU engine refuses such weights.
//!
//! The arithmetic, which every path here keeps bit for bit (integer sums are
//! exact in any order, and the float steps are the same IEEE operations in
//! the same order, native and wasm): for output j,
//! `acc = Σ_b d_b · isum_b(j)` in order of the blocks b from 0.0, where
//! `isum_b(j) = Σ_{k ∈ b} qx[k] · q[k, j]` as an integer, then
//! `out[j] = bias[j] + acc · scale(j)` (the head: no bias). An int4 head's
//! groups of 32 run along its rows, the dot products, as Q4_0's: there each
//! block's step is `acc + (d_b · s(v, b)) · isum_b`, and the logit is `acc`.
//!
//! int4 weights have a scale per row and panel of 32 columns (a group), so
//! it cannot wait until the end: each panel's input is first scaled row by
//! row, `y[r] = x[r] · s(r, panel)`, and `y` is quantised (per panel); then
//! `acc` as above over the int4 fields, and `out[j] = bias[j] + acc`.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use super::int8_dot_amx::Tiles;
use crate::storage::format::Format;
use crate::storage::matrix::Matrix;
use crate::storage::panels::PANEL;
use crate::storage::quads::{OCT, QUAD};

pub use super::int8_quantise::{quantise, quantise_block, step, Quantised, BLOCK};

/// [`quantise`] of a row of x, in AVX2 where the CPU has it (the same bits).
fn quantised(x: &[f32]) -> Quantised {
    // q: (⌈k / 8⌉ · 8), d: (⌈k / BLOCK⌉), as `quantise` makes them.
    let (mut q, mut d) =
        (vec![0i8; x.len().next_multiple_of(OCT)], vec![0.0; x.len().div_ceil(BLOCK)]);
    quantise_into(x, None, &mut q, &mut d);
    (q, d)
}

/// x, or `y = x · s` (a row of x in one int4 panel's scales), quantised into
/// `q` and `d` block by block: AVX2 where the CPU has it, SIMD128 in wasm,
/// else the definition's [`quantise_block`] (the same bits).
fn quantise_into(x: &[f32], s: Option<&[f32]>, q: &mut [i8], d: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { super::int8_quantise_avx2::quantise(x, s, q, d) };
    }
    #[cfg(target_arch = "wasm32")]
    return super::int8_quantise_simd128::quantise(x, s, q, d);
    #[allow(unreachable_code)] // in wasm, where SIMD128 always runs
    let y = s.map(|s| scaled(x, s));
    let y = y.as_deref().unwrap_or(x);
    for ((yb, qb), d) in y.chunks(BLOCK).zip(q.chunks_mut(BLOCK)).zip(d) {
        *d = quantise_block(yb, qb);
    }
}

/// The scales of outputs `c`: the columns' (int8) or the matrix's one, per output.
fn scales(w: &Matrix, c: Range<usize>) -> Vec<f32> {
    match w.format {
        Format::Int8PerTensor => vec![w.scales().first().copied().unwrap_or(0.0); c.len()],
        _ => w.scales()[c].to_vec(),
    }
}

/// `out = x @ w + bias` for columns `c` (whole panels) of an int8 matrix in
/// quad panels: x (m, k), bias (c.len()), out (m, c.len()). Each panel's
/// quads are read once per two rows of x (a prefill's pairs re-read it from
/// L2): a pair shares each weight's load and magnitude.
pub fn matmul(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, cols) = (w.rows, c.len());
    let quads = w.int8_quads().expect("a matrix in quad panels"); // (n / PANEL, ⌈k / 4⌉, PANEL)
    let len = k.div_ceil(QUAD) * PANEL; // words of one panel
    let s = scales(w, c.clone());
    #[cfg(target_arch = "x86_64")]
    if x.len() >= AMX_ROWS * k && super::parallel::amx() {
        let mut tiles = Tiles::new(x.len() / k, k);
        for (r, xr) in x.chunks_exact(k).enumerate() {
            let (q, d) = tiles.row(r, k);
            // SAFETY: the CPU has AVX-512 F (`amx` checks).
            unsafe { super::int8_quantise_avx2::quantise_wide(xr, None, q, d) };
        }
        for (p, (s, b)) in s.chunks_exact(PANEL).zip(bias.chunks_exact(PANEL)).enumerate() {
            // (⌈k / 4⌉, PANEL)
            let panel = &quads[(c.start / PANEL + p) * len..][..len];
            // SAFETY: the CPU has AMX-INT8 and AVX-512, and the process
            // holds the tile state (`amx` checks).
            let acc = unsafe { tiles.int8_panel(panel) }; // (m, PANEL)
            put_panel(out, cols, p, acc, b, Some(s));
        }
        return;
    }
    let rows: Vec<Quantised> = x.chunks_exact(k).map(quantised).collect(); // (m)
    let parts = s.chunks_exact(PANEL).zip(bias.chunks_exact(PANEL)).enumerate();
    for (p, (s, b)) in parts {
        let panel = &quads[(c.start / PANEL + p) * len..][..len]; // (⌈k / 4⌉, PANEL)
        let sums = column_sums(panel, rows.len()); // (blocks, PANEL), where pairs use them
        for (two, o) in rows.chunks(2).zip(out.chunks_mut(2 * cols)) {
            let (o0, o1) = o.split_at_mut(cols);
            let o0 = &mut o0[p * PANEL..][..PANEL];
            match two {
                [(qa, da), (qb, db)] => {
                    let o1 = &mut o1[p * PANEL..][..PANEL];
                    run_panel([(qa, da), (qb, db)], panel, s, b, [o0, o1], sums.as_deref());
                }
                [(qx, d)] => run_panel([(qx, d)], panel, s, b, [o0], None),
                _ => unreachable!("chunks of two"),
            }
        }
    }
}

/// Panel `p`'s columns of each row of `out` (m, cols) from the tiles'
/// sums `acc` (m, PANEL): `o[j] = b[j] + a[j] · s[j]`, or `b[j] + a[j]`
/// where `s` is None (int4's: its group scales went into x).
#[cfg(target_arch = "x86_64")]
fn put_panel(out: &mut [f32], cols: usize, p: usize, acc: &[f32], b: &[f32], s: Option<&[f32]>) {
    for (or, a) in out.chunks_exact_mut(cols).zip(acc.chunks_exact(PANEL)) {
        let or = &mut or[p * PANEL..][..PANEL];
        match s {
            Some(s) => or.iter_mut().enumerate().for_each(|(j, o)| *o = b[j] + a[j] * s[j]),
            None => or.iter_mut().enumerate().for_each(|(j, o)| *o = b[j] + a[j]),
        }
    }
}

/// Rows of x from which a prefill's sums run in AMX tiles (16 rows a tile:
/// fewer pad the rest with zeros). One core of a Xeon with AMX, 124M,
/// 64-token prefill: int8 60 → 34 ms, int4 94 → 75 (its per-panel
/// quantiser is now half of what is left).
#[cfg(target_arch = "x86_64")]
const AMX_ROWS: usize = 4;

/// The panel's Σ w of each column and block, where VNNI's loops take
/// them: with more than one row of x (for one row, summing them costs what
/// they save).
fn column_sums(panel: &[u32], rows: usize) -> Option<Vec<i32>> {
    #[cfg(target_arch = "x86_64")]
    if rows > 1 && super::parallel::vnni() {
        // SAFETY: the CPU has AVX2 and AVX-512 VNNI and VL (just checked).
        return Some(unsafe { super::int8_dot_avx2::column_sums(panel) });
    }
    let _ = (panel, rows);
    None
}

/// One panel's outputs for `R` quantised rows of x (1, or a prefill's
/// pairs), in AVX2 where the CPU has it and SIMD128 in wasm (`sums`: the
/// panel's [`column_sums`], or None): each row's bits the same for any `R`.
fn run_panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
    sums: Option<&[i32]>,
) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(sums), true) = (sums, wide_vnni()) {
        // SAFETY: the CPU has AVX-512 F, BW and VNNI (just checked).
        return unsafe { super::int8_dot_avx512::panel(x, panel, s, b, o, sums) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::parallel::vnni() {
        // SAFETY: the CPU has AVX2 and AVX-512 VNNI and VL (just checked).
        return unsafe { super::int8_dot_avx2::panel_vnni(x, panel, s, b, o, sums) };
    }
    let _ = sums; // VNNI's alone
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { super::int8_dot_avx2::panel(x, panel, s, b, o) };
    }
    #[cfg(target_arch = "wasm32")]
    return super::int8_dot_simd128::panel(x, panel, s, b, o);
    #[allow(unreachable_code)] // in wasm, where SIMD128 always runs
    for ((qx, d), o) in x.into_iter().zip(o) {
        panel_here(qx, d, panel, s, b, o);
    }
}

/// Whether the integer sums run VNNI in AVX-512's registers: where the
/// core runs 512-bit operations whole ([`super::parallel::wide_panels`]).
#[cfg(target_arch = "x86_64")]
fn wide_vnni() -> bool {
    super::parallel::vnni() && super::parallel::wide_panels()
}

/// One panel's outputs for one quantised row: the definition, in plain
/// loops (whose 32 integer sums a quad the compiler vectorises).
fn panel_here(qx: &[i8], d: &[f32], panel: &[u32], s: &[f32], b: &[f32], o: &mut [f32]) {
    let mut acc = [0.0f32; PANEL];
    let quads = panel.chunks_exact(PANEL).zip(qx.chunks_exact(QUAD)).take(panel.len() / PANEL);
    let per_block = BLOCK / QUAD;
    let mut blocks = d.iter();
    let mut isum = [0i32; PANEL];
    for (r4, (words, x4)) in quads.enumerate() {
        for (sum, &word) in isum.iter_mut().zip(words) {
            let w = word.to_le_bytes();
            *sum += (0..QUAD).map(|t| i32::from(x4[t]) * i32::from(w[t] as i8)).sum::<i32>();
        }
        let last = r4 + 1 == panel.len() / PANEL;
        if (r4 + 1) % per_block == 0 || last {
            let db = *blocks.next().expect("a scale per block");
            for (a, sum) in acc.iter_mut().zip(&mut isum) {
                *a = step(*a, db, *sum);
                *sum = 0;
            }
        }
    }
    for (j, o) in o.iter_mut().enumerate() {
        *o = b[j] + acc[j] * s[j];
    }
}

/// The logits of head rows `vr` for each row of x (n_out, n_embd) of a head
/// multiplying 8-bit activations (`Dot8::Rows`): `(n_out, vr.len())`, 32
/// rows' logits at once from a zero bias (`0 + acc` is `acc`, which is
/// never −0). int8: each `acc · scale(v)`, through the matmul's panel loop
/// over the head's quad panels; int4: each `Σ_b (d_b · s(v, b)) · isum_b`
/// (its groups along the dot, as Q4_0's), through the int4 panel loop over
/// its head oct panels, each lane with its row's scales.
pub fn head(x: &[f32], head: &Matrix, vr: Range<usize>) -> Vec<f32> {
    let n_embd = head.cols;
    let rows: Vec<Quantised> = x.chunks_exact(n_embd).map(quantised).collect(); // (n_out)
    let zeros = [0.0f32; PANEL];
    if let Some(quads) = head.int8_head_quads() {
        let len = n_embd.div_ceil(QUAD) * PANEL; // words of one panel
        let part = |p: usize| {
            let panel = &quads[p * len..][..len]; // (⌈n_embd / 4⌉, PANEL)
            (panel, std::array::from_fn::<f32, PANEL, _>(|j| scale_of(head, PANEL * p + j)))
        };
        return head_panels(&rows, vr, part, |(panel, s), (qx, d), o| {
            run_panel([(qx, d)], panel, s, &zeros, [o], None);
        });
    }
    let (octs, scales) =
        head.int4_head_octs().expect("an int8 or int4 head laid out for 8-bit activations");
    let (len, per) = (n_embd / OCT * PANEL, n_embd / BLOCK * PANEL); // words, scales of one panel
                                                                     // (n_embd / 8, PANEL) words, (n_embd / 32, PANEL) scales
    let part = |p: usize| (&octs[p * len..][..len], &scales[p * per..][..per]);
    head_panels(&rows, vr, part, |(panel, s), (qx, d), o| {
        run_int4_panel([(qx, d)], panel, Some(s), &zeros, [o]);
    })
}

/// Head rows `vr` for each quantised row of x, a panel of 32 rows at a time
/// (`part(p)`: what panel `p`'s logits read, made once a panel;
/// `logits(part, row, out)` writes them): `(rows.len(), vr.len())`.
fn head_panels<P>(
    rows: &[Quantised],
    vr: Range<usize>,
    part: impl Fn(usize) -> P,
    logits: impl Fn(&P, &Quantised, &mut [f32]),
) -> Vec<f32> {
    let n = vr.len();
    let mut out = vec![0.0; rows.len() * n]; // (n_out, n)
    for p in vr.start / PANEL..vr.end.div_ceil(PANEL) {
        let part = part(p);
        let (first, last) = ((PANEL * p).max(vr.start), (PANEL * (p + 1)).min(vr.end));
        for (row, or) in rows.iter().zip(out.chunks_exact_mut(n)) {
            let mut o = [0.0f32; PANEL];
            logits(&part, row, &mut o);
            let from = first - PANEL * p;
            or[first - vr.start..last - vr.start].copy_from_slice(&o[from..from + last - first]);
        }
    }
    out
}

/// The scale of head row `v` (0 past the last row: a panel's padding).
fn scale_of(head: &Matrix, v: usize) -> f32 {
    match (v < head.rows, head.format) {
        (false, _) => 0.0,
        (true, Format::Int8PerTensor) => head.scales().first().copied().unwrap_or(0.0),
        (true, _) => head.scales()[v],
    }
}

/// `out = x @ w + bias` for columns `c` (whole panels) of an int4 matrix in
/// oct panels: x (m, k), bias (c.len()), out (m, c.len()). Each row of x is
/// scaled and quantised once per panel, then multiplied in integers, rows
/// in pairs (a prefill's: each word unpacked once for both).
pub fn matmul_int4(x: &[f32], w: &Matrix, c: Range<usize>, bias: &[f32], out: &mut [f32]) {
    let (k, cols) = (w.rows, c.len());
    let (octs, scales) = w.int4_octs().expect("a matrix in oct panels"); // (n / PANEL, ⌈k / 8⌉, PANEL), (n / PANEL, k)
    let len = k.div_ceil(OCT) * PANEL; // words of one panel

    #[cfg(target_arch = "x86_64")]
    if x.len() >= AMX_ROWS * k && super::parallel::amx() {
        let mut tiles = Tiles::new(x.len() / k, k);
        for (p, b) in bias.chunks_exact(PANEL).enumerate() {
            let at = c.start / PANEL + p;
            let (panel, s) = (&octs[at * len..][..len], &scales[at * k..][..k]); // (⌈k / 8⌉, PANEL), (k)
            let next = octs.get((at + 1) * len..).map_or(&[][..], |n| &n[..len.min(n.len())]);
            for (r, xr) in x.chunks_exact(k).enumerate() {
                super::int8_dot_amx::prefetch_share(next, r, x.len() / k);
                let (q, d) = tiles.row(r, k);
                // SAFETY: the CPU has AVX-512 F (`amx` checks).
                unsafe { super::int8_quantise_avx2::quantise_wide(xr, Some(s), q, d) };
            }
            // SAFETY: the CPU has AMX-INT8 and AVX-512, and the process
            // holds the tile state (`amx` checks).
            let acc = unsafe { tiles.int4_panel(panel) }; // (m, PANEL)
            put_panel(out, cols, p, acc, b, None);
        }
        return;
    }
    // Two rows' y in one panel's scales, quantised: (⌈k / 8⌉ · 8) and (⌈k / BLOCK⌉) each.
    let mut qy = [vec![0i8; k.next_multiple_of(OCT)], vec![0i8; k.next_multiple_of(OCT)]];
    let mut d = [vec![0.0f32; k.div_ceil(BLOCK)], vec![0.0f32; k.div_ceil(BLOCK)]];
    for (p, b) in bias.chunks_exact(PANEL).enumerate() {
        let at = c.start / PANEL + p;
        let (panel, s) = (&octs[at * len..][..len], &scales[at * k..][..k]); // (⌈k / 8⌉, PANEL), (k)
        for (two, o) in x.chunks(2 * k).zip(out.chunks_mut(2 * cols)) {
            let (o0, o1) = o.split_at_mut(cols);
            let o0 = &mut o0[p * PANEL..][..PANEL];
            let ([qa, qb], [da, db]) = (&mut qy, &mut d);
            quantise_into(&two[..k], Some(s), qa, da);
            if two.len() == 2 * k {
                quantise_into(&two[k..], Some(s), qb, db);
                let o1 = &mut o1[p * PANEL..][..PANEL];
                run_int4_panel([(qa, da), (qb, db)], panel, None, b, [o0, o1]);
            } else {
                run_int4_panel([(qa, da)], panel, None, b, [o0]);
            }
        }
    }
}

/// `y[r] = x[r] · s[r]`: a row of x in one panel's int4 scales.
pub fn scaled(x: &[f32], s: &[f32]) -> Vec<f32> {
    x.iter().zip(s).map(|(&x, &s)| x * s).collect()
}

/// One int4 panel's outputs for `R` quantised rows (1, or a prefill's
/// pairs), in AVX2 where the CPU has it and SIMD128 in wasm: each row's
/// bits the same for any `R`. A decode step's one row takes AVX2's
/// registers on every core, as int8's does ([`run_panel`]): on the Intel
/// core where AVX-512 runs every other panel loop faster, this one was the
/// slower (124M, int4 × 8-bit decode, AVX-512 → AVX2, five rounds A B: one
/// thread 3.88 → 3.23 ms/token, two 2.17 → 1.97; on the same runs every
/// f32-activation format's panels kept AVX-512 the faster, f16 19.7 ms
/// against AVX2's 27.7 on one thread). A pair (a prefill where AMX's
/// tiles are not there) keeps AVX-512's, unpacking each word once for both
/// rows.
fn run_int4_panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    #[cfg(target_arch = "x86_64")]
    if R > 1 && wide_vnni() {
        // SAFETY: the CPU has AVX-512 F, BW and VNNI (just checked).
        return unsafe { super::int8_dot_avx512::int4_panel(x, panel, s, b, o) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::parallel::vnni() {
        // SAFETY: the CPU has AVX2 and AVX-512 VNNI and VL (just checked).
        return unsafe { super::int8_dot_avx2::int4_panel_vnni(x, panel, s, b, o) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::parallel::avx2() {
        // SAFETY: the CPU has AVX2 (just checked).
        return unsafe { super::int8_dot_avx2::int4_panel(x, panel, s, b, o) };
    }
    #[cfg(target_arch = "wasm32")]
    return super::int8_dot_simd128::int4_panel(x, panel, s, b, o);
    #[allow(unreachable_code)] // in wasm, where SIMD128 always runs
    for ((qy, d), o) in x.into_iter().zip(o) {
        int4_panel_here(qy, d, panel, s, b, o);
    }
}

/// One int4 panel's outputs for one quantised row (a matrix's, scaled:
/// `s` None; or a head's, `s` its lanes' scales by block, `(blocks,
/// PANEL)`): the definition, `o[j] = b[j] + Σ_b (d_b [· s(b, j)]) · isum_b`.
fn int4_panel_here(
    qy: &[i8],
    d: &[f32],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: &mut [f32],
) {
    let mut acc = [0.0f32; PANEL];
    let mut isum = [0i32; PANEL];
    let octs = panel.len() / PANEL;
    for (o8, (words, x8)) in panel.chunks_exact(PANEL).zip(qy.chunks_exact(OCT)).enumerate() {
        for (sum, &word) in isum.iter_mut().zip(words) {
            let field = |t: usize| ((word >> (8 * (t % 4) + 4 * (t / 4))) & 0xf) as i32 - 8;
            *sum += (0..OCT).map(|t| i32::from(x8[t]) * field(t)).sum::<i32>();
        }
        if (o8 + 1) % (BLOCK / OCT) == 0 || o8 + 1 == octs {
            let blk = o8 / (BLOCK / OCT);
            for (j, (a, sum)) in acc.iter_mut().zip(&mut isum).enumerate() {
                let db = s.map_or(d[blk], |s| d[blk] * s[blk * PANEL + j]);
                *a = step(*a, db, *sum);
                *sum = 0;
            }
        }
    }
    for ((o, &b), a) in o.iter_mut().zip(b).zip(acc) {
        *o = b + a;
    }
}

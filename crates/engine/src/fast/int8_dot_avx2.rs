//! [`int8_dot`](super::int8_dot)'s sums in AVX2: 32 products of 8-bit
//! inputs and int8 weights in five instructions (`vpmaddubsw` multiplies an
//! unsigned byte by a signed one, so each weight's sign moves to its input
//! first; pairs of products fit sixteen bits, 2 · 128 · 127 < 2¹⁵, and
//! `vpmaddwd` adds pairs of those); where the CPU has AVX-512 VNNI, in
//! three (`vpdpbusd` on AVX2's registers multiplies and adds into the sums
//! at once: one core of a Zen 4-class EPYC, 124M shape, 64-token prefill
//! with int8 weights 123 → 90 ms, int4 134 → 118). The integer sums are
//! exact, and each block's float step is the definition's, so the bits are
//! its.

use std::arch::x86_64::*;

use super::int8_quantise::BLOCK;
use super::touch;
use crate::storage::panels::PANEL;
use crate::storage::quads::{OCT, QUAD};

/// Four 8-bit inputs from `q` at `at` as one word, broadcast to every
/// lane: one load (assembling it byte by byte cost as much as the sums).
#[inline]
#[target_feature(enable = "avx2")]
fn broadcast4(q: &[i8], at: usize) -> __m256i {
    let bytes: &[u8] = bytemuck::cast_slice(&q[at..at + 4]);
    _mm256_set1_epi32(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// 32 bytes from `v` at `at` (`v` at least that long).
#[inline]
#[target_feature(enable = "avx2")]
fn load_bytes<T: bytemuck::Pod>(v: &[T], at: usize) -> __m256i {
    let bytes: &[u8] = bytemuck::cast_slice(&v[at..]);
    // SAFETY: 32 bytes are there (the slice is checked), read unaligned.
    unsafe { _mm256_loadu_si256(bytes[..32].as_ptr().cast()) }
}

/// Eight f32s from `v` (at least eight long).
#[inline]
#[target_feature(enable = "avx2")]
fn load(v: &[f32]) -> __m256 {
    // SAFETY: eight floats are there (the slice is checked), read unaligned.
    unsafe { _mm256_loadu_ps(v[..8].as_ptr()) }
}

/// One panel's outputs for `R` quantised rows of x at once (`x[r]`: `qx`,
/// `d`; `panel`: `(⌈k / 4⌉, PANEL)` words of quads): `o[r][j] = b[j] +
/// acc(j) · s[j]`. A quad's 32 columns are four registers of integer sums
/// against its four inputs broadcast (`vpmaddubsw` of |w| and x with w's
/// sign, x never −128); each block's sums join the float
/// sums when the block ends. `R` = 2 (a prefill's pairs) loads each weight
/// and takes its magnitude once for both rows; each row's sums and bits
/// are its own, the same for any `R`.
#[target_feature(enable = "avx2")]
pub fn panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
) {
    // SAFETY: this function is compiled for AVX2, all `panel_in::<_, false>` needs.
    unsafe { panel_in::<R, false>(x, panel, s, b, o, None) }
}

/// [`panel`] with AVX-512 VNNI's `vpdpbusd` (on AVX2's registers) in place
/// of `vpmaddubsw`, `vpmaddwd` and the add: the same integer sums. With the
/// panel's [`column_sums`], x + 128 against w as it is (a prefill's rows).
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
pub fn panel_vnni<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
    sums: Option<&[i32]>,
) {
    // SAFETY: this function is compiled for AVX2 and VNNI, all `panel_in` needs.
    unsafe { panel_in::<R, true>(x, panel, s, b, o, sums) }
}

/// Σ w of each column over each block of a panel of quads (`(⌈k / 4⌉,
/// PANEL)` words): `(blocks, PANEL)`, made once a panel for every pair of
/// rows of a prefill ([`panel_vnni`]'s offset).
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
pub fn column_sums(panel: &[u32]) -> Vec<i32> {
    const QUADS: usize = BLOCK / QUAD; // quads a block
    let n_quads = panel.len() / PANEL;
    let mut out = vec![0; n_quads.div_ceil(QUADS) * PANEL]; // (blocks, PANEL)
    let ones = _mm256_set1_epi8(1);
    for (blk, o) in out.chunks_exact_mut(PANEL).enumerate() {
        let mut wsum = [_mm256_setzero_si256(); PANEL / 8];
        for r4 in blk * QUADS..n_quads.min((blk + 1) * QUADS) {
            let words = &panel[r4 * PANEL..][..PANEL];
            for (h, sum) in wsum.iter_mut().enumerate() {
                *sum = _mm256_dpbusd_epi32(*sum, ones, load_bytes(words, 8 * h));
            }
        }
        for (h, sum) in wsum.into_iter().enumerate() {
            // SAFETY: eight ints are there (the slice is checked), written unaligned.
            unsafe { _mm256_storeu_si256(o[8 * h..][..8].as_mut_ptr().cast(), sum) };
        }
    }
    out
}

/// The loops of [`panel`] (`VNNI` false) and [`panel_vnni`], inlined into
/// each so compiled for its features. SAFETY: the CPU has AVX2, and AVX-512
/// VNNI and VL with `VNNI` or `sums`.
#[inline(always)]
unsafe fn panel_in<const R: usize, const VNNI: bool>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
    sums: Option<&[i32]>,
) {
    const QUADS: usize = BLOCK / QUAD; // quads a block
    let mut acc = [[_mm256_setzero_ps(); PANEL / 8]; R];
    let n_quads = panel.len() / PANEL;
    let flip = _mm256_set1_epi8(-128);
    // With the column sums (a prefill's pairs), x + 128 against w (below):
    // one core of a Xeon with AMX, 124M, 64-token prefill with int8 weights
    // 101 → 88 ms summing them in here, 88 → 84.5 made once a panel. Not for
    // one row, where summing them here doubled the `vpdpbusd`s, which one
    // port runs (a decode step 11.9 → 15.0 ms in one run).
    for blk in 0..x[0].1.len() {
        let mut isum = [[_mm256_setzero_si256(); PANEL / 8]; R];
        for r4 in blk * QUADS..n_quads.min((blk + 1) * QUADS) {
            // this row's lines 8 KiB on (past the panel: the next one's)
            touch::lines(panel, r4 * PANEL..(r4 + 1) * PANEL);
            let words = &panel[r4 * PANEL..][..PANEL];
            // With the column sums, x + 128 as unsigned bytes (the quantiser
            // never gives −128) against w as it is: Σ (x + 128) · w − 128 ·
            // Σ w is Σ x · w exactly, one `vpdpbusd` a row where the sign
            // trick takes two more instructions.
            let xs: [__m256i; R] = std::array::from_fn(|r| {
                let x4 = broadcast4(x[r].0, r4 * QUAD);
                if sums.is_some() {
                    _mm256_xor_si256(x4, flip)
                } else {
                    x4
                }
            });
            for h in 0..PANEL / 8 {
                let w = load_bytes(words, 8 * h);
                if sums.is_some() {
                    for (row, &x4) in isum.iter_mut().zip(&xs) {
                        row[h] = dot4::<true>(row[h], x4, w);
                    }
                    continue;
                }
                let magnitude = _mm256_abs_epi8(w);
                for (sums, &x4) in isum.iter_mut().zip(&xs) {
                    sums[h] = dot4::<VNNI>(sums[h], magnitude, _mm256_sign_epi8(x4, w));
                }
            }
        }
        if let Some(columns) = sums {
            // 128 · Σ w of each column over the block
            let offsets: [__m256i; PANEL / 8] = std::array::from_fn(|h| {
                _mm256_slli_epi32::<7>(load_bytes(&columns[blk * PANEL..], 8 * h))
            });
            for row in &mut isum {
                for (sum, offset) in row.iter_mut().zip(offsets) {
                    *sum = _mm256_sub_epi32(*sum, offset);
                }
            }
        }
        for ((acc, sums), (_, d)) in acc.iter_mut().zip(isum).zip(&x) {
            let dv = _mm256_set1_ps(d[blk]);
            for (a, sum) in acc.iter_mut().zip(sums) {
                *a = _mm256_add_ps(*a, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(sum)));
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            let v = _mm256_add_ps(load(&b[8 * h..]), _mm256_mul_ps(a, load(&s[8 * h..])));
            // SAFETY: eight floats are there (the slice is checked), written unaligned.
            unsafe { _mm256_storeu_ps(o[8 * h..][..8].as_mut_ptr(), v) };
        }
    }
}

/// `acc` plus, in each 32-bit lane, the products of its four unsigned bytes
/// of `u` and signed bytes of `v`: `vpdpbusd` with `VNNI`, else
/// `vpmaddubsw` (pairs of products, exact in sixteen bits: |u| ≤ 128, |v| ≤
/// 127) and `vpmaddwd`. SAFETY: as [`panel_in`]'s.
#[inline(always)]
unsafe fn dot4<const VNNI: bool>(acc: __m256i, u: __m256i, v: __m256i) -> __m256i {
    match VNNI {
        true => _mm256_dpbusd_epi32(acc, u, v),
        false => {
            let pairs = _mm256_maddubs_epi16(u, v);
            _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
        }
    }
}

/// One int4 panel's outputs for `R` quantised rows (`x[r]`: `qy`, `d`;
/// `panel`: `(⌈k / 8⌉, PANEL)` words of octs; 1, or a prefill's pairs, each
/// row's bits the same for any `R`): `o[r][j] = b[j] + acc(j)`, each block's
/// step `d_b` (a matrix's, its row scaled) or `d_b · s(b, j)` (a head's:
/// `s` its lanes' scales by block, `(blocks, PANEL)`), as the definition. The
/// fields are stored plus 8, so `vpmaddubsw` takes them as unsigned bytes
/// against the signed inputs, and 8 · Σ qy of the block comes off each
/// sum. Each sixteen-bit half of a column's lane adds sixteen of its
/// block's products (16 · 15 · 127 < 2¹⁵), so they are added as such and
/// widened once a block. A pair unpacks each word once for both rows.
#[target_feature(enable = "avx2")]
pub fn int4_panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    // SAFETY: this function is compiled for AVX2, all `int4_panel_in::<_, false>` needs.
    unsafe { int4_panel_in::<R, false>(x, panel, s, b, o) }
}

/// [`int4_panel`] with AVX-512 VNNI: each pair of fields and inputs summed
/// by `vpdpbusd` straight into 32 bits (no sixteen-bit sums to widen at the
/// end of a block): the same integer sums.
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
pub fn int4_panel_vnni<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    // SAFETY: this function is compiled for AVX2 and VNNI, all `int4_panel_in` needs.
    unsafe { int4_panel_in::<R, true>(x, panel, s, b, o) }
}

/// The loops of [`int4_panel`] (`VNNI` false) and [`int4_panel_vnni`],
/// inlined into each. SAFETY: as [`panel_in`]'s.
#[inline(always)]
unsafe fn int4_panel_in<const R: usize, const VNNI: bool>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    const OCTS: usize = BLOCK / OCT; // octs a block
    let (low, ones) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi16(1));
    let mut acc = [[_mm256_setzero_ps(); PANEL / 8]; R];
    let n_octs = panel.len() / PANEL;
    for blk in 0..x[0].1.len() {
        // sixteen bits a pair (32 bits a quad with VNNI)
        let mut sums = [[_mm256_setzero_si256(); PANEL / 8]; R];
        for o8 in blk * OCTS..n_octs.min((blk + 1) * OCTS) {
            // this row's lines 8 KiB on (past the panel: the next one's)
            touch::lines(panel, o8 * PANEL..(o8 + 1) * PANEL);
            let words = &panel[o8 * PANEL..][..PANEL];
            let xs: [(__m256i, __m256i); R] = std::array::from_fn(|r| {
                (broadcast4(x[r].0, o8 * OCT), broadcast4(x[r].0, o8 * OCT + QUAD))
            });
            for h in 0..PANEL / 8 {
                let w = load_bytes(words, 8 * h);
                let lo = _mm256_and_si256(w, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), low);
                for (sums, &(xlo, xhi)) in sums.iter_mut().zip(&xs) {
                    sums[h] = match VNNI {
                        true => dot4::<true>(dot4::<true>(sums[h], lo, xlo), hi, xhi),
                        false => _mm256_add_epi16(
                            sums[h],
                            _mm256_add_epi16(
                                _mm256_maddubs_epi16(lo, xlo),
                                _mm256_maddubs_epi16(hi, xhi),
                            ),
                        ),
                    };
                }
            }
        }
        for ((acc, sums), &(qy, d)) in acc.iter_mut().zip(sums).zip(&x) {
            let (dv, offset) = (_mm256_set1_ps(d[blk]), _mm256_set1_epi32(8 * block_sum(qy, blk)));
            for (h, (a, sum)) in acc.iter_mut().zip(sums).enumerate() {
                let quads = if VNNI { sum } else { _mm256_madd_epi16(sum, ones) };
                let isum = _mm256_sub_epi32(quads, offset);
                let ds = match s {
                    Some(s) => _mm256_mul_ps(dv, load(&s[blk * PANEL + 8 * h..])),
                    None => dv,
                };
                *a = _mm256_add_ps(*a, _mm256_mul_ps(ds, _mm256_cvtepi32_ps(isum)));
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            let v = _mm256_add_ps(load(&b[8 * h..]), a);
            // SAFETY: eight floats are there (the slice is checked), written unaligned.
            unsafe { _mm256_storeu_ps(o[8 * h..][..8].as_mut_ptr(), v) };
        }
    }
}

/// Σ qy over block `blk` as an integer: a whole block in four vector
/// instructions and a horizontal sum, a last short one (its octs only, the
/// padding zero) in a loop.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn block_sum(qy: &[i8], blk: usize) -> i32 {
    let q = &qy[(BLOCK * blk).min(qy.len())..];
    if q.len() < BLOCK {
        return q.iter().map(|&v| i32::from(v)).sum();
    }
    let pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), load_bytes(q, 0));
    let quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    let s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256::<1>(quads));
    let s = _mm_hadd_epi32(s, s);
    _mm_cvtsi128_si32(_mm_hadd_epi32(s, s))
}

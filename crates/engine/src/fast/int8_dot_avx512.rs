//! [`int8_dot`](super::int8_dot)'s sums in AVX-512's registers, where the
//! core runs a 512-bit operation whole ([`wide_panels`]) and has VNNI:
//! a panel's 32 columns are two registers, so each `vpdpbusd` adds 64
//! products where AVX2's registers add 32. For a prefill's pairs of rows
//! over int8 quad panels (with the panel's column sums: x + 128 against w
//! as it is, as [`panel_vnni`] there) and for int4 oct panels' pairs (a
//! decode step's one row runs AVX2's loop, measured the faster: see
//! `int8_dot::run_int4_panel`). The integer sums are exact and each lane's float
//! steps are the ones AVX2's loops take, so the bits are theirs.
//!
//! [`wide_panels`]: super::parallel::wide_panels
//! [`panel_vnni`]: super::int8_dot_avx2::panel_vnni

use std::arch::x86_64::*;

use super::int8_dot_avx2::block_sum;
use super::int8_quantise::BLOCK;
use super::quant_avx512::{load, store};
use super::touch;
use crate::storage::panels::PANEL;
use crate::storage::quads::{OCT, QUAD};

/// Registers a panel's row of 32 columns takes (sixteen lanes each).
const HALVES: usize = PANEL / 16;

/// Four 8-bit inputs from `q` at `at` as one word, broadcast to every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast4(q: &[i8], at: usize) -> __m512i {
    let bytes: &[u8] = bytemuck::cast_slice(&q[at..at + 4]);
    _mm512_set1_epi32(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// 64 bytes from `v` at `at` (`v` at least that long).
#[inline]
#[target_feature(enable = "avx512f")]
fn load_bytes<T: bytemuck::Pod>(v: &[T], at: usize) -> __m512i {
    let bytes: &[u8] = bytemuck::cast_slice(&v[at..]);
    // SAFETY: 64 bytes are there (the slice is checked), read unaligned.
    unsafe { _mm512_loadu_si512(bytes[..64].as_ptr().cast()) }
}

/// One int8 panel's outputs for `R` quantised rows of a prefill (`x[r]`:
/// `qx`, `d`; `panel`: `(⌈k / 4⌉, PANEL)` words of quads; `sums`: the
/// panel's column sums, `(blocks, PANEL)`): `o[r][j] = b[j] + acc(j) ·
/// s[j]`, each block's integer sum `Σ (x + 128) · w − 128 · Σ w`, which is
/// `Σ x · w` exactly (the quantiser never gives −128).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub fn panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: &[f32],
    b: &[f32],
    o: [&mut [f32]; R],
    sums: &[i32],
) {
    const QUADS: usize = BLOCK / QUAD; // quads a block
    let mut acc = [[_mm512_setzero_ps(); HALVES]; R];
    let n_quads = panel.len() / PANEL;
    let flip = _mm512_set1_epi8(-128);
    for blk in 0..x[0].1.len() {
        let mut isum = [[_mm512_setzero_si512(); HALVES]; R];
        for r4 in blk * QUADS..n_quads.min((blk + 1) * QUADS) {
            let words = &panel[r4 * PANEL..][..PANEL];
            let xs: [__m512i; R] =
                std::array::from_fn(|r| _mm512_xor_si512(broadcast4(x[r].0, r4 * QUAD), flip));
            for h in 0..HALVES {
                let w = load_bytes(words, 16 * h);
                for (row, &x4) in isum.iter_mut().zip(&xs) {
                    row[h] = _mm512_dpbusd_epi32(row[h], x4, w);
                }
            }
        }
        // 128 · Σ w of each column over the block
        let offsets: [__m512i; HALVES] = std::array::from_fn(|h| {
            _mm512_slli_epi32::<7>(load_bytes(&sums[blk * PANEL..], 16 * h))
        });
        for (acc, (row, (_, d))) in acc.iter_mut().zip(isum.iter().zip(&x)) {
            let dv = _mm512_set1_ps(d[blk]);
            for (a, (&sum, &offset)) in acc.iter_mut().zip(row.iter().zip(&offsets)) {
                let sum = _mm512_sub_epi32(sum, offset);
                *a = _mm512_add_ps(*a, _mm512_mul_ps(dv, _mm512_cvtepi32_ps(sum)));
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            let v = _mm512_add_ps(load(&b[16 * h..]), _mm512_mul_ps(a, load(&s[16 * h..])));
            store(&mut o[16 * h..], v);
        }
    }
}

/// One int4 panel's outputs for `R` quantised rows (1, or a prefill's
/// pairs; `x[r]`: `qy`, `d`; `panel`: `(⌈k / 8⌉, PANEL)` words of octs):
/// `o[r][j] = b[j] + acc(j)`, each block's step `d_b` (a matrix's, its row
/// scaled) or `d_b · s(b, j)` (a head's: `s` its lanes' scales by block,
/// `(blocks, PANEL)`), as AVX2's [`int4_panel`]: the fields are stored plus
/// 8, unsigned bytes against the signed inputs, and 8 · Σ qy of the block
/// comes off each sum. A pair unpacks each word once for both rows.
///
/// [`int4_panel`]: super::int8_dot_avx2::int4_panel
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub fn int4_panel<const R: usize>(
    x: [(&[i8], &[f32]); R],
    panel: &[u32],
    s: Option<&[f32]>,
    b: &[f32],
    o: [&mut [f32]; R],
) {
    const OCTS: usize = BLOCK / OCT; // octs a block
    let low = _mm512_set1_epi8(0x0f);
    let mut acc = [[_mm512_setzero_ps(); HALVES]; R];
    let n_octs = panel.len() / PANEL;
    for blk in 0..x[0].1.len() {
        let mut sums = [[_mm512_setzero_si512(); HALVES]; R];
        for o8 in blk * OCTS..n_octs.min((blk + 1) * OCTS) {
            // this row's lines 8 KiB on (past the panel: the next one's)
            touch::lines(panel, o8 * PANEL..(o8 + 1) * PANEL);
            let words = &panel[o8 * PANEL..][..PANEL];
            let xs: [(__m512i, __m512i); R] = std::array::from_fn(|r| {
                (broadcast4(x[r].0, o8 * OCT), broadcast4(x[r].0, o8 * OCT + QUAD))
            });
            for h in 0..HALVES {
                let w = load_bytes(words, 16 * h);
                let lo = _mm512_and_si512(w, low);
                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(w), low);
                for (sums, &(xlo, xhi)) in sums.iter_mut().zip(&xs) {
                    sums[h] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums[h], lo, xlo), hi, xhi);
                }
            }
        }
        for ((acc, sums), &(qy, d)) in acc.iter_mut().zip(sums).zip(&x) {
            let (dv, offset) = (_mm512_set1_ps(d[blk]), _mm512_set1_epi32(8 * block_sum(qy, blk)));
            for (h, (a, sum)) in acc.iter_mut().zip(sums).enumerate() {
                let isum = _mm512_sub_epi32(sum, offset);
                let ds = match s {
                    Some(s) => _mm512_mul_ps(dv, load(&s[blk * PANEL + 16 * h..])),
                    None => dv,
                };
                *a = _mm512_add_ps(*a, _mm512_mul_ps(ds, _mm512_cvtepi32_ps(isum)));
            }
        }
    }
    for (acc, o) in acc.into_iter().zip(o) {
        for (h, a) in acc.into_iter().enumerate() {
            store(&mut o[16 * h..], _mm512_add_ps(load(&b[16 * h..]), a));
        }
    }
}

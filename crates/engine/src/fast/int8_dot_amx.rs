//! [`int8_dot`](super::int8_dot)'s prefill sums in AMX tiles, where the
//! CPU has AMX-INT8 (Intel Xeons since Sapphire Rapids) and Linux lets the
//! process use it. One `tdpbssd` multiplies a tile of 16 rows of quantised
//! x by one block of 32 inputs against a tile of 16 columns: 8,192 products,
//! where AVX-512's `vpdpbusd` adds 64. The matrix's quad panels are already
//! the layout a tile of the right-hand side takes (four consecutive inputs
//! of one column a word), so they load as they are. Each block's integer
//! sums are exact, and each output's float steps are AVX-512's loops' own
//! (`acc + d_b · isum_b` in order of the blocks from 0.0, then `bias + acc
//! · s`), so the bits are theirs.

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::int8_quantise::{Quantised, BLOCK};
use super::quant_avx512::{load, store};
use crate::storage::panels::PANEL;
use crate::storage::quads::QUAD;

/// Rows (of x, and of a tile of sums) a tile holds.
const TILE_ROWS: usize = 16;

/// Columns a tile of sums holds: half a panel.
const TILE_COLS: usize = PANEL / 2;

/// Quad rows of a panel in one block of inputs.
const BLOCK_QUADS: usize = BLOCK / QUAD;

/// Whether the CPU has AMX-INT8 and the kernel has granted this process
/// its tile state (asked once: Linux hands it out on request only).
pub fn available() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        // CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
        let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
        let has = edx & (1 << 24) != 0 && edx & (1 << 25) != 0;
        has && request_tiles()
    })
}

/// Asks Linux for the tile data state (`ARCH_REQ_XCOMP_PERM`,
/// `XFEATURE_XTILEDATA`): without it the first tile instruction faults.
fn request_tiles() -> bool {
    #[cfg(target_os = "linux")]
    {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a plain system call with two integer arguments.
        unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The tiles' shapes (`ldtilecfg`'s 64 bytes): tmm0 and tmm1 (and tmm5
/// and tmm6, for a second tile of rows) a block's sums for the panel's two
/// halves (16 rows of 16 i32), tmm2 (tmm7) 16 rows of x's block (32 bytes
/// each), tmm3 and tmm4 the halves' quad rows of the block (8 rows of 16
/// words), loaded once for every row of x.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    fn new() -> Config {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        let (sums, x, half) =
            ((TILE_ROWS, 4 * TILE_COLS), (TILE_ROWS, BLOCK), (BLOCK_QUADS, 4 * TILE_COLS));
        let shapes = [sums, sums, x, half, half, sums, sums, x]; // tmm0..tmm7
        for (t, (rows, bytes)) in shapes.into_iter().enumerate() {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(bytes as u16).to_le_bytes());
            c[48 + t] = rows as u8;
        }
        Config(c)
    }
}

/// `out = x @ w + bias` for a part's panels: `rows` x quantised (m ≥ 1),
/// `quads` the part's quad panels (`(panels, ⌈k / 4⌉, PANEL)`), `s` and
/// `bias` its columns' scales and biases, `out` `(m, cols)`.
///
/// # Safety
/// The CPU has AMX-INT8 and AVX-512 F, and [`available`] said so (the
/// process holds the tile state).
#[target_feature(enable = "avx512f")]
pub unsafe fn matmul(
    rows: &[Quantised],
    quads: &[u32],
    k: usize,
    s: &[f32],
    bias: &[f32],
    out: &mut [f32],
) {
    let (m, cols, blocks) = (rows.len(), s.len(), k.div_ceil(BLOCK));
    let n_quads = k.div_ceil(QUAD);
    let width = blocks * BLOCK; // bytes of a row of `a`
    let m_tiles = m.next_multiple_of(2 * TILE_ROWS); // rows in whole pairs of tiles
                                                     // x's rows one after another, zeros past k and past m: (m_tiles, width)
    let mut a = vec![0i8; m_tiles * width];
    for ((q, _), ar) in rows.iter().zip(a.chunks_exact_mut(width)) {
        let n = q.len().min(width);
        ar[..n].copy_from_slice(&q[..n]);
    }
    let config = Config::new();
    // SAFETY: 64 bytes of a valid palette-1 configuration.
    unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack)) };
    let mut sums = vec![0i32; m_tiles * PANEL]; // (m_tiles, PANEL) a block's integer sums
    let mut acc = vec![0.0f32; m * PANEL]; // (m, PANEL) the panel's float sums
    let mut last = vec![0u32; BLOCK_QUADS * PANEL]; // (8, PANEL) a short last block, zero-padded
    let (len, short) = (n_quads * PANEL, n_quads % BLOCK_QUADS); // words of one panel; quads of a short last block
    for (p, (ps, pb)) in s.chunks_exact(PANEL).zip(bias.chunks_exact(PANEL)).enumerate() {
        let panel = &quads[p * len..][..len]; // (⌈k / 4⌉, PANEL)
        if short != 0 {
            last.fill(0);
            last[..short * PANEL].copy_from_slice(&panel[(n_quads - short) * PANEL..]);
        }
        acc.fill(0.0);
        for blk in 0..blocks {
            let b = match short != 0 && blk + 1 == blocks {
                true => &last[..],
                false => &panel[blk * BLOCK_QUADS * PANEL..][..BLOCK_QUADS * PANEL],
            };
            // SAFETY: every tile reads within `a` and `b` and writes within
            // `sums` (`block_sums`' shapes, from the starts of `a`'s block,
            // `b` and `sums`' rows of each pair of tiles).
            unsafe {
                load_block(b.as_ptr());
                for t in (0..m_tiles).step_by(2 * TILE_ROWS) {
                    let x = a[t * width + blk * BLOCK..].as_ptr();
                    block_sums(x, width, sums[t * PANEL..].as_mut_ptr());
                }
            }
            add_steps(rows, blk, &sums, &mut acc);
        }
        for (o, a) in out.chunks_exact_mut(cols).zip(acc.chunks_exact(PANEL)) {
            for h in 0..PANEL / 16 {
                let at = 16 * h;
                let v = _mm512_mul_ps(load(&a[at..]), load(&ps[at..]));
                store(&mut o[p * PANEL + at..], _mm512_add_ps(load(&pb[at..]), v));
            }
        }
    }
    // SAFETY: tiles configured above; releasing them ends their use.
    unsafe { asm!("tilerelease", options(nostack)) };
}

/// `acc[r] += d_b(r) · isum_b(r)` for every row r of x, block `blk`.
#[inline]
#[target_feature(enable = "avx512f")]
fn add_steps(rows: &[Quantised], blk: usize, sums: &[i32], acc: &mut [f32]) {
    for ((_, d), (isum, acc)) in
        rows.iter().zip(sums.chunks_exact(PANEL).zip(acc.chunks_exact_mut(PANEL)))
    {
        let dv = _mm512_set1_ps(d[blk]);
        for h in 0..PANEL / 16 {
            let at = 16 * h;
            // SAFETY: sixteen i32 are there (the slice is checked).
            let isum = unsafe { _mm512_loadu_si512(isum[at..at + 16].as_ptr().cast()) };
            let sum = _mm512_add_ps(load(&acc[at..]), _mm512_mul_ps(dv, _mm512_cvtepi32_ps(isum)));
            store(&mut acc[at..], sum);
        }
    }
}

/// A panel's block of quad rows (`b`: `(8, PANEL)` words) into tmm3 and
/// tmm4, its two halves, for every pair of row tiles of the block.
///
/// # Safety
/// Tiles configured by [`Config`]; `b` holds 8 rows of `PANEL` words.
#[inline(always)]
unsafe fn load_block(b: *const u32) {
    unsafe {
        asm!(
            "tileloadd tmm3, [{b} + {row}]",
            "tileloadd tmm4, [{b1} + {row}]",
            b = in(reg) b,
            b1 = in(reg) b.add(TILE_COLS),
            row = in(reg) 4 * PANEL,
            options(nostack),
        );
    }
}

/// One block's integer sums of two tiles of rows of x (32 rows from `x`,
/// `stride` bytes apart) against the block in tmm3 and tmm4, into `sums`
/// (`(32, PANEL)` i32): four products in flight.
///
/// # Safety
/// Tiles configured by [`Config`], the block loaded by [`load_block`]; the
/// pointers hold what the tiles read and write.
#[inline(always)]
unsafe fn block_sums(x: *const i8, stride: usize, sums: *mut i32) {
    unsafe {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm5",
            "tilezero tmm6",
            "tileloadd tmm2, [{x} + {stride}]",
            "tileloadd tmm7, [{x1} + {stride}]",
            "tdpbssd tmm0, tmm2, tmm3",
            "tdpbssd tmm1, tmm2, tmm4",
            "tdpbssd tmm5, tmm7, tmm3",
            "tdpbssd tmm6, tmm7, tmm4",
            "tilestored [{s} + {row}], tmm0",
            "tilestored [{s1} + {row}], tmm1",
            "tilestored [{s2} + {row}], tmm5",
            "tilestored [{s3} + {row}], tmm6",
            x = in(reg) x,
            x1 = in(reg) x.add(TILE_ROWS * stride),
            stride = in(reg) stride,
            row = in(reg) 4 * PANEL,
            s = in(reg) sums,
            s1 = in(reg) sums.add(TILE_COLS),
            s2 = in(reg) sums.add(TILE_ROWS * PANEL),
            s3 = in(reg) sums.add(TILE_ROWS * PANEL + TILE_COLS),
            options(nostack),
        );
    }
}

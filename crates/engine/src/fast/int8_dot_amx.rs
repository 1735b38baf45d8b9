//! [`int8_dot`](super::int8_dot)'s prefill sums in AMX tiles, where the
//! CPU has AMX-INT8 (Intel Xeons since Sapphire Rapids) and Linux lets the
//! process use it. One `tdpbssd` multiplies a tile of 16 rows of quantised
//! x by one block of 32 inputs against a tile of 16 columns: 8,192 products,
//! where AVX-512's `vpdpbusd` adds 64. The matrix's quad panels are already
//! the layout a tile of the right-hand side takes (four consecutive inputs
//! of one column a word), so they load as they are; an int4 panel's fields
//! are unpacked into quads once a panel, for every row of x. Each block's
//! integer sums are exact, and each output's float steps are the other
//! paths' own (`acc + d_b · isum_b` in order of the blocks from 0.0; the
//! caller's `bias + acc · s`, or int4's `bias + acc`), so the bits are theirs.

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::int8_quantise::BLOCK;
use super::quant_avx512::{load, store};
use crate::storage::panels::PANEL;
use crate::storage::quads::{OCT, QUAD};

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
    {
        false
    }
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

/// Row `r`'s share (of `m` rows) of the next panel's words (`next`: none
/// past the matrix's end), on their way to L1 while this panel's rows are
/// quantised: a panel is read once a prefill, from memory, between long
/// stretches of work on x that leave the hardware's prefetcher idle; a
/// share a row keeps the line fill buffers free for the quantiser's own
/// loads, where the whole panel at once stalled them.
pub fn prefetch_share(next: &[u32], r: usize, m: usize) {
    const LINE: usize = 16; // words of a cache line
    let share = next.len().div_ceil(LINE).div_ceil(m) * LINE;
    for line in next.get(r * share..).unwrap_or(&[]).chunks(LINE).take(share / LINE) {
        // SAFETY: a prefetch reads nothing the program sees, and SSE is
        // part of every x86_64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
}

/// A prefill's rows of x, quantised, and a panel's sums over them in
/// tiles: the caller quantises each row into [`Tiles::row`] (x for int8
/// weights, once; x in a panel's int4 scales, once a panel), then takes
/// each panel's float sums.
pub struct Tiles {
    m: usize,
    blocks: usize,
    a: Vec<i8>,     // (m_tiles, blocks · BLOCK) x's rows, zeros past k and past m
    d: Vec<f32>,    // (m, blocks) their blocks' scales
    b: Vec<u32>,    // (blocks · 8, PANEL) a panel's quad rows in whole blocks
    sums: Vec<i32>, // (m_tiles, PANEL) a block's integer sums
    acc: Vec<f32>,  // (m, PANEL) the panel's float sums
}

impl Tiles {
    /// Room for `m` rows of `k` inputs.
    pub fn new(m: usize, k: usize) -> Tiles {
        let blocks = k.div_ceil(BLOCK);
        let m_tiles = m.next_multiple_of(2 * TILE_ROWS); // rows in whole pairs of tiles
        Tiles {
            m,
            blocks,
            a: vec![0; m_tiles * blocks * BLOCK],
            d: vec![0.0; m * blocks],
            b: vec![0; blocks * BLOCK_QUADS * PANEL],
            sums: vec![0; m_tiles * PANEL],
            acc: vec![0.0; m * PANEL],
        }
    }

    /// Row `r`'s 8-bit values (`k` rounded up to whole octs, as
    /// `int8_dot`'s quantiser writes them) and its blocks' scales.
    pub fn row(&mut self, r: usize, k: usize) -> (&mut [i8], &mut [f32]) {
        let width = self.blocks * BLOCK;
        let q = &mut self.a[r * width..][..k.next_multiple_of(OCT)];
        (q, &mut self.d[r * self.blocks..][..self.blocks])
    }

    /// The float sums `(m, PANEL)` of every row against an int8 panel
    /// (`(⌈k / 4⌉, PANEL)` words of quads): `acc + d_b · isum_b` in order
    /// of the blocks from 0.0.
    ///
    /// # Safety
    /// [`available`] said so (the CPU has AMX-INT8 and AVX-512 F, and the
    /// process holds the tile state).
    pub unsafe fn int8_panel(&mut self, panel: &[u32]) -> &[f32] {
        if panel.len() == self.b.len() {
            // SAFETY: as the caller's.
            return unsafe { self.panel_sums(Some(panel)) };
        }
        // A short last block: the panel copied where zeros follow it.
        self.b[..panel.len()].copy_from_slice(panel);
        // SAFETY: as the caller's.
        unsafe { self.panel_sums(None) }
    }

    /// [`int8_panel`](Self::int8_panel) for an int4 panel (`(⌈k / 8⌉,
    /// PANEL)` words of octs, each field stored plus 8): its fields as
    /// int8 quads, each oct's low nibbles (its inputs 0–3) then high (4–7).
    ///
    /// # Safety
    /// As [`int8_panel`](Self::int8_panel)'s.
    pub unsafe fn int4_panel(&mut self, panel: &[u32]) -> &[f32] {
        let (low, eight) = (0x0f0f_0f0f, 0x0808_0808);
        for (o8, words) in panel.chunks_exact(PANEL).enumerate() {
            let (lo, hi) = self.b[2 * o8 * PANEL..][..2 * PANEL].split_at_mut(PANEL);
            for ((l, h), &w) in lo.iter_mut().zip(hi).zip(words) {
                // Each byte 0..=15 less 8: no borrow crosses a byte.
                *l = ((w & low) | 0x8080_8080).wrapping_sub(eight) ^ 0x8080_8080;
                *h = (((w >> 4) & low) | 0x8080_8080).wrapping_sub(eight) ^ 0x8080_8080;
            }
        }
        // SAFETY: as the caller's.
        unsafe { self.panel_sums(None) }
    }

    /// Every row's float sums over a panel of whole blocks of quads
    /// (`(blocks · 8, PANEL)` words): `panel`, or else the one in `b`.
    ///
    /// # Safety
    /// As [`int8_panel`](Self::int8_panel)'s.
    #[target_feature(enable = "avx512f")]
    unsafe fn panel_sums(&mut self, panel: Option<&[u32]>) -> &[f32] {
        let width = self.blocks * BLOCK; // bytes of a row of `a`
        let config = Config::new();
        // SAFETY: 64 bytes of a valid palette-1 configuration.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack)) };
        self.acc.fill(0.0);
        for blk in 0..self.blocks {
            let quads = panel.unwrap_or(&self.b);
            let b = &quads[blk * BLOCK_QUADS * PANEL..][..BLOCK_QUADS * PANEL];
            // SAFETY: every tile reads within `a` and `b` and writes within
            // `sums` (`block_sums`' shapes, from the starts of `a`'s block,
            // `b` and `sums`' rows of each pair of tiles).
            unsafe {
                load_block(b.as_ptr());
                for t in (0..self.sums.len() / PANEL).step_by(2 * TILE_ROWS) {
                    let x = self.a[t * width + blk * BLOCK..].as_ptr();
                    block_sums(x, width, self.sums[t * PANEL..].as_mut_ptr());
                }
            }
            let d = self.d.chunks_exact(self.blocks).map(|d| d[blk]);
            add_steps(d, &self.sums[..self.m * PANEL], &mut self.acc);
        }
        // SAFETY: tiles configured above; releasing them ends their use.
        unsafe { asm!("tilerelease", options(nostack)) };
        &self.acc
    }
}

/// `acc[r] += d_b(r) · isum_b(r)` for every row r of x (`d`: each row's
/// scale of the block).
#[inline]
#[target_feature(enable = "avx512f")]
fn add_steps(d: impl Iterator<Item = f32>, sums: &[i32], acc: &mut [f32]) {
    for (d, (isum, acc)) in d.zip(sums.chunks_exact(PANEL).zip(acc.chunks_exact_mut(PANEL))) {
        let dv = _mm512_set1_ps(d);
        for h in 0..PANEL / 16 {
            let at = 16 * h;
            // SAFETY: sixteen i32 are there (the slice is checked).
            let isum = unsafe { _mm512_loadu_si512(isum[at..at + 16].as_ptr().cast()) };
            let step = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(isum));
            let sum = _mm512_add_ps(load(&acc[at..]), step);
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

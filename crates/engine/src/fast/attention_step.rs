//! A decode step's attention on the CPU (fewer than
//! [`MIN_ROWS`](super::attention::MIN_ROWS) rows): the twin's numbers
//! ([`attention::run_cpu`](crate::kernels::attention::run_cpu)) bit for bit.
//! The twin scores one head at a time, eight keys side by side, each key a
//! lane, so each lane's products come a cache row apart: compiled for SSE2,
//! four loads one at a time and three shuffles per four products; and it
//! walks the caches once per head, 256 bytes of each 3 KB row (GPT-2). Here
//! a vector's keys' values are loaded whole and turned across in registers
//! (AVX2: 8×8, SIMD128: 4×4 transposes), every head's scores for a block of keys are made
//! before the next block (the cache rows read in order, once), and the
//! values are mixed a cache row at a time into every head's outputs. Each
//! score is still summed in order of d from −0.0 and then scaled, each
//! output in order of key from 0.0 with the twin's `a / sum · v`, and the
//! weights are the twin's own [`exp_sum`](super::attention::exp_sum).
//! (A layout paid per step, `fast::attention::prefill`'s, costs a decode
//! step more than it saves.)

use std::ops::Range;

use crate::model::Heads;

/// The twin's attention for the rows of `q` (`(rows, qkv_width)`, the
/// caller's slicing), the same bits, into `y` (`(rows, n_embd)`); false
/// (nothing written) where a native CPU lacks AVX2: the caller runs the
/// twin. In wasm SIMD128 (every browser with WebGPU has it) it always runs.
/// A step's one row over a long cache has its heads cut among threads
/// (each head's numbers are the unsplit run's: heads share nothing).
pub fn run(
    q: &[f32],           // (rows, n_embd + 2 * kv_dim)
    key_cache: &[f32],   // (n_positions, kv_dim)
    value_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32], // (rows, n_embd)
) -> bool {
    let pass = Pass { q, key_cache, value_cache, heads, keys0, scale };
    if !runs() {
        return false;
    }
    let parts = head_parts(heads, q.len() / heads.qkv_width(), keys0);
    if let [all] = &parts[..] {
        heads_part(&pass, all.clone(), y);
        return true;
    }
    let ys = super::parallel::map(parts.clone(), |h| {
        let mut yp = vec![0.0; h.len() * heads.head_size]; // (heads h, head_size)
        heads_part(&pass, h, &mut yp);
        yp
    });
    let hs = heads.head_size;
    for (h, yp) in parts.into_iter().zip(ys) {
        y[h.start * hs..h.end * hs].copy_from_slice(&yp);
    }
    true
}

/// The heads [`run`] gives each thread for `rows` rows after `keys0`
/// cached keys: cut by its multiply-adds for a step's one row; one part
/// for several (a speculative check, which the caller cuts by rows).
pub fn head_parts(heads: Heads, rows: usize, keys0: usize) -> Vec<Range<usize>> {
    let work = if rows == 1 { (keys0 + 1) * 2 * heads.n_embd * CACHE_READ } else { 0 };
    super::parallel::parts(heads.n_embd / heads.head_size, work, 1)
}

/// What one of the step's multiply-adds weighs against a matmul's in
/// [`parts`](super::parallel::parts)' work: each reads an f32 of the K/V
/// cache that no other step's read brought in (the caches of twelve layers
/// outgrow the L2 cache past a few dozen keys), where a weight's multiply-adds
/// read half a byte (int4) to four. Bound by those reads, the heads pay to
/// share from a few dozen keys on, not from the 171 keys an unweighted
/// count waits for (GPT-2-124M).
const CACHE_READ: usize = 8;

/// Whether [`run`] runs here: AVX2 natively, always in wasm.
fn runs() -> bool {
    cfg!(target_arch = "wasm32") || super::parallel::avx2()
}

/// Heads `h` of every row of the pass into `y` (`(rows, h.len() ·
/// head_size)`), in the copy [`runs`] found.
fn heads_part(pass: &Pass, h: Range<usize>, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX2 (`runs` checked).
    unsafe {
        run_avx2(pass, h, y);
    }
    #[cfg(target_arch = "wasm32")]
    rows::<simd128::Simd128>(pass, h, y);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
    let _ = (pass, h, y);
}

/// [`run`]'s inputs, handed to each compiled copy in one piece.
#[derive(Clone, Copy)]
struct Pass<'a> {
    q: &'a [f32],           // (rows, n_embd + 2 * kv_dim)
    key_cache: &'a [f32],   // (n_positions, kv_dim)
    value_cache: &'a [f32], // (n_positions, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
}

/// A vector width's scores: `LANES` keys a vector, turned across in registers.
trait Across {
    /// Keys scored side by side in one vector.
    const LANES: usize;

    /// `out[b · LANES + l] = (Σ_d q[d] · key(j0 + b · LANES + l)[d]) · scale`
    /// for `b < B`, each sum from −0.0 in order of d (the twin's
    /// `attention::weights`); B vectors' chains of adds in flight.
    fn scores<'a, const B: usize>(
        q: &[f32],
        key: &impl Fn(usize) -> &'a [f32],
        j0: usize,
        scale: f32,
        out: &mut [f32], // (B · LANES)
    );
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_avx2(pass: &Pass, h: Range<usize>, y: &mut [f32]) {
    rows::<avx2::Avx2>(pass, h, y)
}

/// Every row of the pass, heads `part`: their scores, softmax weights and
/// mix into `y` (`(rows, part.len() · head_size)`).
#[inline(always)]
fn rows<W: Across>(pass: &Pass, part: Range<usize>, y: &mut [f32]) {
    let Pass { q, key_cache, value_cache, heads, keys0, scale } = *pass;
    let (hs, h0) = (heads.head_size, part.start);
    let width = part.len() * hs; // a row of y
    let mut att = Vec::new(); // (part.len(), stride) scores, then weights
    let mut sums = vec![0.0f32; part.len()]; // (part.len()) each head's sum of weights
    for (row, r) in q.chunks_exact(heads.qkv_width()).enumerate() {
        let n_keys = keys0 + row + 1;
        let stride = n_keys.next_multiple_of(W::LANES);
        att.resize(part.len() * stride, 0.0);
        let qp = &r[h0 * hs..part.end * hs];
        scores::<W>(qp, h0, key_cache, heads, n_keys, scale, &mut att);
        for (a, sum) in att.chunks_exact_mut(stride).zip(&mut sums) {
            *sum = super::attention::exp_sum(&mut a[..n_keys]);
        }
        let out = &mut y[row * width..][..width];
        mix(&att, &sums, h0, value_cache, heads, n_keys, out);
    }
}

/// `att[h, j] = (q_{h0 + h} · k_j) · scale` for keys `0..n_keys` of each of
/// the row's heads from h0 (and lanes past them to a whole vector: the last key repeated there,
/// nobody reads them), a block of two vectors of keys for every head before
/// the next block.
#[inline(always)]
fn scores<W: Across>(
    q: &[f32], // (heads, head_size) one row's queries of heads h0..
    h0: usize,
    key_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    n_keys: usize,
    scale: f32,
    att: &mut [f32], // (heads, stride)
) {
    let (hs, kv_dim, lanes) = (heads.head_size, heads.kv_dim(), W::LANES);
    let (stride, pairs) = (n_keys.next_multiple_of(lanes), n_keys / (2 * lanes) * 2 * lanes);
    let blocks = (0..pairs).step_by(2 * lanes).map(|j0| (j0, 2));
    let blocks = blocks.chain((pairs..n_keys).step_by(lanes).map(|j0| (j0, 1)));
    for (j0, vectors) in blocks {
        for (h, qh) in q.chunks_exact(hs).enumerate() {
            let k0 = heads.kv0(h0 + h);
            let key = |j: usize| &key_cache[j.min(n_keys - 1) * kv_dim + k0..][..hs];
            let out = &mut att[h * stride + j0..][..vectors * lanes];
            match vectors {
                2 => W::scores::<2>(qh, &key, j0, scale, out),
                _ => W::scores::<1>(qh, &key, j0, scale, out),
            }
        }
    }
}

/// `out[h] = Σ_j (att[h, j] / sums[h]) · v_j` (head h0 + h's value columns), in
/// order of j from 0.0, the twin's `mix`: a cache row at a time, into every
/// head's outputs (`out`, a few KB, stays in L1).
#[inline(always)]
fn mix(
    att: &[f32],  // (heads, stride) unnormalised weights of heads h0..
    sums: &[f32], // (heads) their sums
    h0: usize,
    value_cache: &[f32], // (n_positions, kv_dim)
    heads: Heads,
    n_keys: usize,
    out: &mut [f32], // (heads · head_size)
) {
    let (hs, kv_dim) = (heads.head_size, heads.kv_dim());
    let stride = att.len() / sums.len();
    out.fill(0.0);
    for j in 0..n_keys {
        let v = &value_cache[j * kv_dim..][..kv_dim];
        for (h, (o, sum)) in out.chunks_exact_mut(hs).zip(sums).enumerate() {
            let a = att[h * stride + j] / sum;
            for (o, vv) in o.iter_mut().zip(&v[heads.kv0(h0 + h)..][..hs]) {
                *o += a * vv;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// AVX2's eight lanes.
    pub struct Avx2;

    impl super::Across for Avx2 {
        const LANES: usize = 8;

        #[inline(always)]
        fn scores<'a, const B: usize>(
            q: &[f32],
            key: &impl Fn(usize) -> &'a [f32],
            j0: usize,
            scale: f32,
            out: &mut [f32],
        ) {
            // SAFETY (every intrinsic): inlined into `run_avx2`, compiled
            // for AVX2; each load and store is of eight floats of a slice
            // holding them.
            unsafe {
                let mut acc = [_mm256_set1_ps(-0.0); B];
                let keys: [[&[f32]; 8]; B] =
                    std::array::from_fn(|b| std::array::from_fn(|l| key(j0 + 8 * b + l)));
                let whole = q.len() / 8 * 8;
                for d0 in (0..whole).step_by(8) {
                    for (a, ks) in acc.iter_mut().zip(&keys) {
                        let rows = ks.map(|k| _mm256_loadu_ps(k[d0..][..8].as_ptr()));
                        for (d, col) in across(rows).into_iter().enumerate() {
                            *a = _mm256_add_ps(*a, _mm256_mul_ps(_mm256_set1_ps(q[d0 + d]), col));
                        }
                    }
                }
                // A head size past a multiple of eight: each column gathered.
                for (d, &qd) in q.iter().enumerate().skip(whole) {
                    for (a, ks) in acc.iter_mut().zip(&keys) {
                        let col = ks.map(|k| k[d]);
                        let col = _mm256_loadu_ps(col.as_ptr());
                        *a = _mm256_add_ps(*a, _mm256_mul_ps(_mm256_set1_ps(qd), col));
                    }
                }
                for (a, o) in acc.into_iter().zip(out.chunks_exact_mut(8)) {
                    _mm256_storeu_ps(o.as_mut_ptr(), _mm256_mul_ps(a, _mm256_set1_ps(scale)));
                }
            }
        }
    }

    /// The 8×8 transpose: `out[d]` lane l is `r[l]` lane d.
    #[inline(always)]
    fn across(r: [__m256; 8]) -> [__m256; 8] {
        // SAFETY: shuffles of registers; inlined into code compiled for AVX2.
        unsafe {
            // Pairs of rows interleaved, within each 128-bit half.
            let t = [
                _mm256_unpacklo_ps(r[0], r[1]),
                _mm256_unpackhi_ps(r[0], r[1]),
                _mm256_unpacklo_ps(r[2], r[3]),
                _mm256_unpackhi_ps(r[2], r[3]),
                _mm256_unpacklo_ps(r[4], r[5]),
                _mm256_unpackhi_ps(r[4], r[5]),
                _mm256_unpacklo_ps(r[6], r[7]),
                _mm256_unpackhi_ps(r[6], r[7]),
            ];
            // Four rows' value d (and d + 4) in each half.
            let u = [
                _mm256_shuffle_ps::<0x44>(t[0], t[2]),
                _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
                _mm256_shuffle_ps::<0x44>(t[1], t[3]),
                _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
                _mm256_shuffle_ps::<0x44>(t[4], t[6]),
                _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
                _mm256_shuffle_ps::<0x44>(t[5], t[7]),
                _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
            ];
            // Rows 0–3's half beside rows 4–7's.
            [
                _mm256_permute2f128_ps::<0x20>(u[0], u[4]),
                _mm256_permute2f128_ps::<0x20>(u[1], u[5]),
                _mm256_permute2f128_ps::<0x20>(u[2], u[6]),
                _mm256_permute2f128_ps::<0x20>(u[3], u[7]),
                _mm256_permute2f128_ps::<0x31>(u[0], u[4]),
                _mm256_permute2f128_ps::<0x31>(u[1], u[5]),
                _mm256_permute2f128_ps::<0x31>(u[2], u[6]),
                _mm256_permute2f128_ps::<0x31>(u[3], u[7]),
            ]
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod simd128 {
    use core::arch::wasm32::*;

    /// SIMD128's four lanes.
    pub struct Simd128;

    impl super::Across for Simd128 {
        const LANES: usize = 4;

        #[inline(always)]
        fn scores<'a, const B: usize>(
            q: &[f32],
            key: &impl Fn(usize) -> &'a [f32],
            j0: usize,
            scale: f32,
            out: &mut [f32],
        ) {
            let load = |v: &[f32]| f32x4(v[0], v[1], v[2], v[3]);
            let mut acc = [f32x4_splat(-0.0); B];
            let keys: [[&[f32]; 4]; B] =
                std::array::from_fn(|b| std::array::from_fn(|l| key(j0 + 4 * b + l)));
            let whole = q.len() / 4 * 4;
            for d0 in (0..whole).step_by(4) {
                for (a, ks) in acc.iter_mut().zip(&keys) {
                    let rows = ks.map(|k| load(&k[d0..][..4]));
                    for (d, col) in across(rows).into_iter().enumerate() {
                        *a = f32x4_add(*a, f32x4_mul(f32x4_splat(q[d0 + d]), col));
                    }
                }
            }
            // A head size past a multiple of four: each column gathered.
            for (d, &qd) in q.iter().enumerate().skip(whole) {
                for (a, ks) in acc.iter_mut().zip(&keys) {
                    let col = f32x4(ks[0][d], ks[1][d], ks[2][d], ks[3][d]);
                    *a = f32x4_add(*a, f32x4_mul(f32x4_splat(qd), col));
                }
            }
            for (a, o) in acc.into_iter().zip(out.chunks_exact_mut(4)) {
                let s = f32x4_mul(a, f32x4_splat(scale));
                o.copy_from_slice(&[
                    f32x4_extract_lane::<0>(s),
                    f32x4_extract_lane::<1>(s),
                    f32x4_extract_lane::<2>(s),
                    f32x4_extract_lane::<3>(s),
                ]);
            }
        }
    }

    /// The 4×4 transpose: `out[d]` lane l is `r[l]` lane d.
    #[inline(always)]
    fn across(r: [v128; 4]) -> [v128; 4] {
        // Pairs of rows interleaved, then their halves paired.
        let t0 = i32x4_shuffle::<0, 4, 1, 5>(r[0], r[1]);
        let t1 = i32x4_shuffle::<2, 6, 3, 7>(r[0], r[1]);
        let t2 = i32x4_shuffle::<0, 4, 1, 5>(r[2], r[3]);
        let t3 = i32x4_shuffle::<2, 6, 3, 7>(r[2], r[3]);
        [
            i64x2_shuffle::<0, 2>(t0, t2),
            i64x2_shuffle::<1, 3>(t0, t2),
            i64x2_shuffle::<0, 2>(t1, t3),
            i64x2_shuffle::<1, 3>(t1, t3),
        ]
    }
}

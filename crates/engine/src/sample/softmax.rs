//! Logits to probabilities. All exponentials go through [`exp_nonpositive`]
//! (arguments are ≤ 0 once the max is subtracted) and every sum runs in a
//! fixed order, so the results are bit-identical on native and wasm32.

use std::sync::Arc;

use crate::sample::exp::exp_nonpositive;

/// Independent partial sums: a single running sum makes every addition wait
/// for the previous one (about 4 cycles each), which cost more than the
/// exponentials themselves over a 50k-token vocabulary.
const LANES: usize = 4;

/// softmax(logits / t) and its entropy in bits, with one exponential and no
/// logarithm per token: with z = (l − max) / t and Z = Σ eᶻ, ln p = z − ln Z,
/// so −Σ p ln p = ln Z − Σ p z. `-inf` logits get probability 0. `logits`
/// holds no NaN or +inf and at least one finite value; t > 0.
///
/// Natively the same code is compiled again for AVX-512 or AVX2 and taken
/// where the CPU has it: the baseline x86-64 target puts the exponentials
/// two to a register (SSE2), AVX-512 eight. Each lane's operations are the
/// same IEEE ones in the same order (Rust never fuses a multiply and an
/// add), so the bits are the portable copy's (the test below).
pub(crate) fn softmax_entropy<L: Copy + Into<f64>>(logits: &[L], t: f64) -> (Arc<[f64]>, f64) {
    // Chosen as the CPU twins choose their copies (`fast::parallel`).
    #[cfg(target_arch = "x86_64")]
    {
        use crate::fast::parallel;
        if parallel::avx512() {
            // SAFETY: the CPU has AVX-512 F, all this copy is compiled for.
            return unsafe { wide::softmax_entropy_avx512(logits, t) };
        }
        if parallel::avx2() {
            // SAFETY: the CPU has AVX2, all this copy is compiled for.
            return unsafe { wide::softmax_entropy_avx2(logits, t) };
        }
    }
    softmax_entropy_in(logits, t)
}

/// [`softmax_entropy`] compiled for wider registers (x86-64 only).
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    #[target_feature(enable = "avx512f")]
    pub(super) fn softmax_entropy_avx512<L: Copy + Into<f64>>(
        logits: &[L],
        t: f64,
    ) -> (Arc<[f64]>, f64) {
        softmax_entropy_in(logits, t)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn softmax_entropy_avx2<L: Copy + Into<f64>>(
        logits: &[L],
        t: f64,
    ) -> (Arc<[f64]>, f64) {
        softmax_entropy_in(logits, t)
    }
}

/// [`softmax_entropy`]'s body, inlined into each copy so that each is
/// compiled for its own registers.
#[inline(always)]
fn softmax_entropy_in<L: Copy + Into<f64>>(logits: &[L], t: f64) -> (Arc<[f64]>, f64) {
    let max = max(logits);
    // Dividing by t (not multiplying by 1/t): a subnormal t makes 1/t infinite.
    let z = |v: L| (v.into() - max) / t;
    // A pass with no running sum, which the compiler vectorises. Written in
    // place, in this function: `collect()` into an `Arc` is a call of its
    // own, compiled for the baseline target, and copies through a Vec.
    let mut probs = Arc::<[f64]>::new_uninit_slice(logits.len());
    let slots = Arc::get_mut(&mut probs).expect("just allocated, not shared");
    for (slot, &v) in slots.iter_mut().zip(logits) {
        slot.write(exp_nonpositive(z(v)));
    }
    // SAFETY: the loop above wrote every slot (one per logit).
    let mut probs = unsafe { probs.assume_init() };
    // Σ e·z without a division per token: Σ e·(l − max), divided by t once.
    let (mut e_sums, mut ed_sums) = ([0.0; LANES], [0.0; LANES]);
    let mut add = |lane: usize, e: f64, v: L| {
        e_sums[lane] += e;
        // e = 0 must add nothing, and l may be −∞ there (0 · −∞ is NaN).
        ed_sums[lane] += if e > 0.0 { e * (v.into() - max) } else { 0.0 };
    };
    let (mut e_chunks, mut l_chunks) = (probs.chunks_exact(LANES), logits.chunks_exact(LANES));
    for (e, l) in (&mut e_chunks).zip(&mut l_chunks) {
        for lane in 0..LANES {
            add(lane, e[lane], l[lane]);
        }
    }
    for (lane, (&e, &v)) in e_chunks.remainder().iter().zip(l_chunks.remainder()).enumerate() {
        add(lane, e, v);
    }
    let z_sum: f64 = e_sums.iter().sum(); // ≥ 1: the max contributes e⁰
    let inv_sum = 1.0 / z_sum;
    let slots = Arc::get_mut(&mut probs).expect("just allocated, not shared");
    slots.iter_mut().for_each(|p| *p *= inv_sum);
    let pz = ed_sums.iter().sum::<f64>() / t * inv_sum;
    (probs, ((libm::log(z_sum) - pz) / std::f64::consts::LN_2).max(0.0))
}

/// T = 0: all mass on the largest logit, the lowest id winning ties.
pub(crate) fn one_hot<L: Copy + Into<f64>>(logits: &[L]) -> Arc<[f64]> {
    let (mut best, mut best_value) = (0, f64::NEG_INFINITY);
    for (i, &v) in logits.iter().enumerate() {
        if v.into() > best_value {
            (best, best_value) = (i, v.into());
        }
    }
    (0..logits.len()).map(|i| if i == best { 1.0 } else { 0.0 }).collect()
}

/// The largest value, in lanes like the sums. A plain comparison: NaN never
/// gets this far, and `f64::max`'s handling of it costs more than the loop.
#[inline(always)]
fn max<L: Copy + Into<f64>>(values: &[L]) -> f64 {
    let larger = |a: f64, b: f64| if b > a { b } else { a };
    let mut maxes = [f64::NEG_INFINITY; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for lane in 0..LANES {
            maxes[lane] = larger(maxes[lane], chunk[lane].into());
        }
    }
    for (lane, &v) in chunks.remainder().iter().enumerate() {
        maxes[lane] = larger(maxes[lane], v.into());
    }
    maxes.into_iter().fold(f64::NEG_INFINITY, larger)
}

/// Σ `values` in [`LANES`] interleaved partial sums, added up in a fixed order.
pub(crate) fn sum_lanes(values: impl Iterator<Item = f64>) -> f64 {
    let mut sums = [0.0; LANES];
    for (i, v) in values.enumerate() {
        sums[i % LANES] += v;
    }
    sums.iter().sum()
}

/// Natural-log probabilities of `logits` at temperature 1 (`-inf` stays
/// `-inf`): what beam search adds up.
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&v| exp_nonpositive(v as f64 - max)).sum();
    let lse = max + libm::log(sum);
    logits.iter().map(|&v| v as f64 - lse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Logits of awkward lengths with ties, a −∞ run and a huge spread (so
    /// some exponentials underflow to subnormals and to 0).
    fn logits(n: usize) -> Vec<f32> {
        let mut state = n as u64 ^ 0x9e37_79b9_7f4a_7c15;
        (0..n)
            .map(|i| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let u = (state >> 40) as f32 / (1u64 << 24) as f32;
                match i % 97 {
                    5 if n > 1 => f32::NEG_INFINITY,
                    7 => 3.25, // ties
                    11 => -900.0,
                    _ => 40.0 * u - 20.0,
                }
            })
            .collect()
    }

    fn bits((probs, entropy): (Arc<[f64]>, f64)) -> (Vec<u64>, u64) {
        (probs.iter().map(|p| p.to_bits()).collect(), entropy.to_bits())
    }

    /// Every compiled copy gives the portable copy's bits, for f32 and f64
    /// logits, at awkward lengths and temperatures (0: exact equality).
    #[test]
    fn every_copy_gives_the_same_bits() {
        for n in [1, 3, 4, 5, 63, 65, 1757, 50_257] {
            let l32 = logits(n);
            let l64: Vec<f64> = l32.iter().map(|&v| f64::from(v) * 1.000_000_1).collect();
            for t in [1.0, 0.7, 1.5, 1e-3, 1e-300] {
                let want32 = bits(softmax_entropy_in(&l32, t));
                let want64 = bits(softmax_entropy_in(&l64, t));
                assert_eq!(bits(softmax_entropy(&l32, t)), want32, "n {n}, t {t}");
                assert_eq!(bits(softmax_entropy(&l64, t)), want64, "n {n}, t {t}");
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: checked just above.
                        let got = unsafe { wide::softmax_entropy_avx512(&l32, t) };
                        assert_eq!(bits(got), want32, "AVX-512, n {n}, t {t}");
                        let got = unsafe { wide::softmax_entropy_avx512(&l64, t) };
                        assert_eq!(bits(got), want64, "AVX-512, n {n}, t {t}");
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: checked just above.
                        let got = unsafe { wide::softmax_entropy_avx2(&l32, t) };
                        assert_eq!(bits(got), want32, "AVX2, n {n}, t {t}");
                        let got = unsafe { wide::softmax_entropy_avx2(&l64, t) };
                        assert_eq!(bits(got), want64, "AVX2, n {n}, t {t}");
                    }
                }
            }
        }
    }
}

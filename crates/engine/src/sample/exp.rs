//! eˣ for x ≤ 0, the only exponentials a softmax needs once the max is
//! subtracted. Written out in plain IEEE arithmetic (no table, no branch, no
//! platform libm) for two reasons: it is bit-identical on native and wasm32,
//! which keeps seeded draws identical everywhere, and the compiler vectorises
//! it, which `libm::exp` (branchy, one call per value) prevents: it is about
//! twice as fast over a 50k-token vocabulary, a third of the pipeline's time.
//!
//! Method (Cody–Waite): x = k·ln2 + r with |r| ≤ ln2/2, eʳ by its Taylor
//! series to degree 13 (the first omitted term is < 2⁻⁵⁴ relative), then
//! scaled by 2ᵏ through the exponent bits. Error ≤ 1 ulp against a correctly
//! rounded exp over [−746, 0] (see the test); results below 2⁻¹⁰²² come out
//! as correctly rounded subnormals and anything under −745.2 as 0.

/// ln 2 split so that k · `LN2_HI` is exact for |k| < 2¹¹ (fdlibm's
/// constants, 6.93147180369123816490e-01 and 1.90821492927058770002e-10).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// Adding 1.5 · 2⁵² rounds to the nearest integer and leaves it in the low
/// mantissa bits (valid while |value| < 2⁵¹, which the clamp guarantees).
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// The result is built as (p · 2^(k+54)) · 2⁻⁵⁴ so that 2^(k+54) is always a
/// normal number: the last multiply then rounds once, into a subnormal if need be.
const TWO_POW_MINUS_54: f64 = 1.0 / 18_014_398_509_481_984.0;
/// Below this e^x rounds to 0; the clamp also turns −∞ into 0 without a branch.
const LOWEST: f64 = -746.0;

/// 1/n! for n = 13 down to 2, the Horner coefficients of eʳ after 1 + r.
const INV_FACTORIALS: [f64; 12] = [
    1.0 / 6_227_020_800.0,
    1.0 / 479_001_600.0,
    1.0 / 39_916_800.0,
    1.0 / 3_628_800.0,
    1.0 / 362_880.0,
    1.0 / 40_320.0,
    1.0 / 5_040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
];

/// eˣ for x ≤ 0 (−∞ included, giving 0). `x` must not be NaN or positive.
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f64) -> f64 {
    let x = if x < LOWEST { LOWEST } else { x };
    let shifted = x * std::f64::consts::LOG2_E + SHIFTER;
    let k = shifted - SHIFTER; // round(x / ln 2), exactly
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = INV_FACTORIALS[0];
    for c in &INV_FACTORIALS[1..] {
        p = p * r + c;
    }
    p = (p * r + 1.0) * r + 1.0;
    // The low bits of `shifted` hold k (two's complement); k + 54 + 1023 ≥ 1
    // because x ≥ −746 gives k ≥ −1076, so the exponent field never underflows.
    let biased = shifted.to_bits().wrapping_sub(SHIFTER.to_bits()).wrapping_add(1023 + 54);
    p * f64::from_bits(biased << 52) * TWO_POW_MINUS_54
}

#[cfg(test)]
mod tests {
    use super::exp_nonpositive;

    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn within_one_ulp_of_libm_over_the_whole_range() {
        // Dense near 0 (where most probabilities live), then the full range
        // down to the subnormals and to 0.
        let near = (0..=200_000).map(|i| -(i as f64) / 100_000.0);
        let far = (0..=200_000).map(|i| -746.0 * (i as f64) / 200_000.0);
        for x in near.chain(far) {
            let (got, want) = (exp_nonpositive(x), libm::exp(x));
            assert!(ulps(got, want) <= 1, "exp({x}) = {got:e}, libm {want:e}");
        }
    }

    #[test]
    fn edges() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(-1e300), 0.0);
        assert_eq!(exp_nonpositive(-745.2), 0.0);
        assert!(exp_nonpositive(-745.0) > 0.0); // the smallest subnormal region
        assert_eq!(exp_nonpositive(-1e-300), 1.0);
    }
}

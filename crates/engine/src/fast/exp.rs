//! `exp(x)` in plain f32 arithmetic, for the CPU engine's loops (GELU,
//! SiLU, softmax). `libm::expf` gives the same bits natively and in wasm,
//! but it is a call a value with branches inside, so no loop around it
//! vectorises (GPT-2-124M's GELU through `libm::tanhf` showed up as
//! `expm1f` in a profile of a prefill beside the matmuls). This is the same function (Cephes' `expf`:
//! a Cody–Waite reduction by ln 2 and a degree-6 polynomial, within 2 ulp
//! of e^x) written with +, −, ×, comparisons and bit moves only: IEEE
//! operations whose results are defined to the bit, so native and wasm
//! still agree (Rust never fuses a multiply and an add by itself), and
//! with no branch, so the compiler runs eight or four lanes at once. The
//! sampler's softmax over the vocabulary has its f64 sibling,
//! `sample/exp.rs` (x ≤ 0 only, within 1 ulp in f64).

/// e^x within 2 ulp; +∞ above ln(f32::MAX), 0 below the least normal's
/// log (e^x is then under 1.2e−38, which no caller tells from 0), NaN for NaN.
#[inline]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts, the first with few enough bits that n · LN2_HI is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Added and taken away, it rounds |t| < 2²² to the nearest integer (ties
    // to even), and the sum's low bits are that integer.
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³
    const MAX: f32 = 88.376_26; // ln(f32::MAX)
    const MIN: f32 = -87.336_54; // ln(2⁻¹²⁶)
    let xc = x.clamp(MIN, MAX); // NaN stays NaN
    let t = xc * LOG2E + ROUND;
    let n = t - ROUND; // round(x / ln 2), in −126..=127
    let r = xc - n * LN2_HI - n * LN2_LO; // |r| ≤ ln 2 / 2
    let p = ((((1.987_569_2e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let er = p * r * r + r + 1.0; // e^r
    let k = t.to_bits().wrapping_sub(ROUND.to_bits()); // n as an integer (two's complement)
    let two_n = f32::from_bits(k.wrapping_add(127) << 23); // 2^n
    let e = er * two_n;
    if x > MAX {
        f32::INFINITY
    } else if x < MIN {
        0.0
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::exp;

    /// Distance in units of the last place between two finite positive floats.
    fn ulps(a: f32, b: f32) -> u32 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn within_two_ulp_of_libm_over_the_whole_normal_range() {
        let mut worst = 0;
        let mut x = -87.3f32;
        while x < 88.3 {
            for x in [x, x + 1.0e-3, x * 0.999_9] {
                worst = worst.max(ulps(exp(x), libm::exp(f64::from(x)) as f32));
            }
            x += 0.0137;
        }
        // Tiny arguments, where e^x is 1 + x.
        for i in 0..2000 {
            let x = (i as f32 - 1000.0) * 1.0e-7;
            worst = worst.max(ulps(exp(x), libm::exp(f64::from(x)) as f32));
        }
        assert!(worst <= 2, "{worst} ulp");
    }

    #[test]
    fn the_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-200.0), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(88.376).is_finite());
        assert!(exp(-87.33) > 0.0);
    }
}

//! The bits of an f16 weight as the CPU twins read them: two values per
//! word, widened without a branch or read raw (scaled by a power of two the
//! kernels put on their inputs instead), and the lift that keeps raw values
//! clear of subnormal numbers ([`Matrix::lift_f16`](super::matrix::Matrix::lift_f16)).

/// 2¹¹²: f16's exponent bias 15 to f32's 127.
pub const F16_RAW_SCALE: f32 = f32::from_bits(0x7780_0000);

/// The two f16 values of a word times 2⁻¹¹², exactly: each half moved to the
/// top of an f32 and shifted right arithmetically by 3, which puts its
/// exponent and mantissa where f32's low exponent bits and mantissa are and
/// keeps its sign; the copies of the sign in between are masked off (exact
/// for normal and subnormal values, ±0 stays ±0; weights are finite, so no
/// infinity or NaN case is needed). A product `(x · 2¹¹²) · raw` rounds
/// exactly as `x · w` does (both are the same real number), so a kernel may
/// scale its inputs once instead of every weight, while `|x| < 2¹⁶` keeps
/// `x · 2¹¹²` finite ([`raw_inputs`]).
#[inline(always)]
pub fn f16_pair_raw(word: u32) -> (f32, f32) {
    const KEEP: u32 = 0x8fff_e000; // sign, then f16's 15 bits of exponent and mantissa
    let lo = ((word << 16) as i32 >> 3) as u32 & KEEP;
    let hi = (word as i32 >> 3) as u32 & KEEP;
    (f32::from_bits(lo), f32::from_bits(hi))
}

/// A word's two values: raw ([`f16_pair_raw`], for inputs scaled by
/// [`raw_inputs`]) or widened: times `scale`, the matrix's
/// [`f16_scale`](super::matrix::Matrix::f16_scale) ([`F16_RAW_SCALE`] unless lifted).
#[inline(always)]
pub fn f16_pair_as<const RAW: bool>(word: u32, scale: f32) -> (f32, f32) {
    let (lo, hi) = f16_pair_raw(word);
    if RAW {
        (lo, hi)
    } else {
        (lo * scale, hi * scale)
    }
}

/// `x` times `scale` (a matrix's [`f16_scale`](super::matrix::Matrix::f16_scale)) for
/// products with raw weights, if every scaled value is finite (|x| below
/// 2¹⁶ for an unlifted matrix, 2²⁶ for a lifted one); else the weights must be widened.
pub fn raw_inputs(x: &[f32], scale: f32) -> Option<Vec<f32>> {
    // Scaling by a power of two is exact unless it overflows.
    let scaled: Vec<f32> = x.iter().map(|&v| v * scale).collect();
    scaled.iter().all(|v| v.is_finite()).then_some(scaled)
}

/// How far [`Matrix::lift_f16`](super::matrix::Matrix::lift_f16) raises every f16 exponent: enough that the
/// smallest subnormal (2⁻²⁴) becomes a normal number under [`f16_pair_raw`].
pub const F16_LIFT: u32 = 10;

/// Whether f16 bits `h` can be lifted: the raised exponent of a finite
/// f16 number below 64 in magnitude (subnormals always can), so F16C's
/// conversion reads every lifted word as 2¹⁰ times its weight
/// (`fast::f16c`). A compare, so a scan of a matrix vectorises.
#[inline(always)]
pub(super) fn lifts(h: u32) -> bool {
    (h & 0x7c00) < (31 - F16_LIFT) << 10
}

/// f16 bits `h` (one that [`lifts`]) with the exponent raised by
/// [`F16_LIFT`]: the same number times 2¹⁰. Without a branch, so lifting a
/// matrix vectorises (natively and in SIMD128): a normal number's exponent
/// field is raised in place; a subnormal's 10 bits or fewer, converted to
/// f32 exactly (`m` = 1.f · 2ᵖ), give its normalised mantissa and an
/// exponent from which the lifted one follows (`m · 2⁻²⁴ · 2¹⁰` =
/// 1.f · 2^(p − 14): field p + 1, f32's field 127 + p less 126); ±0 stays.
#[inline(always)]
pub(super) fn lift(h: u32) -> u32 {
    let (sign, e, m) = (h & 0x8000, h & 0x7c00, h & 0x3ff);
    let normal = h + (F16_LIFT << 10);
    let subnormal = sign | ((m as f32).to_bits() >> 13).wrapping_sub(126 << 10);
    match (e, m) {
        (0, 0) => h,
        (0, _) => subnormal,
        _ => normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 pattern: those that lift are finite numbers below 64 in
    /// magnitude, and each lifts to a finite f16 number of 2¹⁰ times its
    /// value (read as F16C reads it), normal unless zero.
    #[test]
    fn lifting_multiplies_every_value_below_64_by_1024() {
        let value = |h: u32| f16_pair_raw(h).0 * F16_RAW_SCALE;
        for h in 0..=u16::MAX as u32 {
            let v = value(h);
            assert_eq!(lifts(h), v.is_finite() && v.abs() < 64.0, "{h:#06x}");
            if lifts(h) {
                let up = lift(h);
                assert!(up <= 0xffff && up & 0x7c00 != 0x7c00, "{h:#06x} → {up:#06x}");
                assert_eq!(value(up).to_bits(), (v * 1024.0).to_bits(), "{h:#06x}");
                assert!(v == 0.0 || up & 0x7c00 != 0, "{h:#06x} stays subnormal");
            }
        }
    }
}

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

/// f16 bits `h` with the exponent raised by [`F16_LIFT`], subnormals
/// normalised (their 10 bits or fewer fit the mantissa exactly); `None` when
/// the lifted bits would not be a finite f16 number (|value| ≥ 64, or not
/// finite): so F16C's conversion reads every lifted word as 2¹⁰ times its
/// weight (`fast::f16c`).
pub(super) fn lifted(h: u32) -> Option<u32> {
    let (sign, e, m) = (h & 0x8000, (h >> 10) & 0x1f, h & 0x3ff);
    if e == 0 && m == 0 {
        return Some(h); // ±0
    }
    if e == 0 {
        // m · 2⁻²⁴ = 1.f · 2^(p − 24), p the top bit of m: exponent field p − 9 + LIFT
        let p = 31 - m.leading_zeros();
        return Some(sign | ((p + F16_LIFT - 9) << 10) | ((m << (10 - p)) & 0x3ff));
    }
    (e + F16_LIFT < 31).then_some(sign | ((e + F16_LIFT) << 10) | m)
}

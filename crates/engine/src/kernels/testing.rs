//! What the CPU twins' own tests share: seeded values and an f64 comparison.

/// Values in about ±2 from a fixed sequence (no RNG needed).
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 4.0 - 2.0
        })
        .collect()
}

/// `got` within `tol` · (1 + |want|) of an f64 reference, element by element.
pub fn close(got: &[f32], want: &[f64], tol: f64) {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((f64::from(g) - w).abs() <= tol * (1.0 + w.abs()), "at {i}: {g} vs {w}");
    }
}

//! A decode step's rows of an int4 matrix, as the SIMD int4 steps take them
//! (`quant_avx2`, `quant_avx512`, `quant_simd128`). A leaf: those files
//! import it, it imports none of them.

/// A row's part of an int4 matrix: its words and its groups' scales
/// ([`Matrix::int4_part`](crate::storage::matrix::Matrix::int4_part)).
pub type Row<'a> = (&'a [u32], &'a [f32]);

/// The words and scales of each of `rows` as pointers, each row checked
/// once to hold `groups` groups' words and scales, for a loop that reads
/// through them: with a bounds check on each row's words and scale in the
/// loop, a group's rows were a loop of compares (AVX2: 43 instructions a
/// row where 30 do the work; AVX-512: a compare and a reload of spilled
/// bounds a row).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn checked<const N: usize>(
    rows: &[(f32, Row); N],
    groups: usize,
) -> [(*const u32, *const f32); N] {
    let words = groups * (crate::storage::format::GROUP / 8);
    for (_, (ws, ss)) in rows {
        assert!(ws.len() >= words && ss.len() >= groups);
    }
    rows.map(|(_, (ws, ss))| (ws.as_ptr(), ss.as_ptr()))
}

// row_dot: the dot products of a cpu-profile decode kernel (matvec_residual):
// one invocation owns the PER_WORD columns of one weight word of a row and
// sums them over every row of k; pair_dot the same over PAIR_COLS columns
// (ln_qkv, ln_fc_gelu, rms_qkv, rms_swiglu). The kernel
// defines `input(kk)`, the k-th input (its normalised row in x, row_in_x.wgsl,
// or a vector in storage).
// The sums are the format's `Lanes` (a value in registers, not a private
// array), and whether rows straddle words is asked once, outside the loop:
// SwiftShader (Chromium's software adapter) keeps arrays indexed in loops in
// memory and pays for both sides of a branch, so either inside the loop cost
// matvec_residual 2.3–2.7 → 0.7–0.9 ms a run (f16, bundled model).
// Each column adds its products in order of k from 0.0, as its twin does.

// Σ_kk input(kk) · w[kk, col0 + t] for t < PER_WORD, w being (k, n).
fn row_dot(k: u32, n: u32, col0: u32) -> Lanes {
    var acc: Lanes;
    if (n % PER_WORD == 0u) {
        // Rows are whole words: one load of a word a row, the columns'
        // scales fetched once.
        let s = w_scales(col0, 1u);
        for (var kk = 0u; kk < k; kk = kk + 1u) {
            let i = kk * n + col0;
            acc = acc + input(kk) * w_lanes(w[i / PER_WORD], i, s);
        }
    } else {
        for (var kk = 0u; kk < k; kk = kk + 1u) {
            acc = acc + input(kk) * lanes_of(row_weights(kk, k, n, col0));
        }
    }
    return acc;
}

// Σ_kk input(kk) · w[kk, col0 + c] for c < PAIR_COLS, w being (k, n): whole
// pairs, through row_dot a word at a time (one loop where a word holds the
// pair, two for f32's), so the sums stay in registers inside the loop.
fn pair_dot(k: u32, n: u32, col0: u32) -> array<f32, PAIR_COLS> {
    var sums: array<f32, PAIR_COLS>;
    for (var j = 0u; j < PAIR_COLS && col0 + j < n; j = j + PER_WORD) {
        let acc = row_dot(k, n, col0 + j);
        for (var t = 0u; t < PER_WORD; t = t + 1u) {
            sums[j + t] = lane_at(acc, t);
        }
    }
    return sums;
}

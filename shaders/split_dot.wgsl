// split_dot: the dot products of a single-row split kernel (ln_qkv_split,
// matvec_residual_split, ln_fc_gelu_split) over the layout of
// shaders/split_k.wgsl. The kernel defines `input(kk)`, the k-th input (its
// normalised row in workgroup memory, or a vector in storage).

// Σ_kk input(kk) · w[kk, col0 + t] for t < PER_WORD over every row of k: the
// whole dot products of this invocation's columns, in every slice. The
// kernel defines `input(kk)`. Call from uniform control flow.
fn split_dot(tid: u32, wide: u32, k: u32, n: u32, col0: u32) -> array<f32, PER_WORD> {
    let slices = WG / wide;
    var acc: array<f32, PER_WORD>;
    for (var k0 = tid / wide; k0 < k; k0 = k0 + UNROLL * slices) {
        // UNROLL rows' weights and inputs, all loaded before any is used.
        var ws: array<array<f32, PER_WORD>, UNROLL>;
        var xs: array<f32, UNROLL>;
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let kk = k0 + u * slices;
            ws[u] = row_weights(kk, k, n, col0);
            xs[u] = 0.0; // written every round: a loop's `var` is not zeroed again everywhere
            if (kk < k) {
                xs[u] = input(kk);
            }
        }
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            for (var t = 0u; t < PER_WORD; t = t + 1u) {
                acc[t] = acc[t] + xs[u] * ws[u][t];
            }
        }
    }
    return reduce_slices(tid, wide, acc);
}


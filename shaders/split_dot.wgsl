// split_dot: the dot products of a single-row split kernel (ln_qkv_split,
// matvec_residual_split, ln_fc_gelu_split) over the layout of
// shaders/split_k.wgsl. The kernel defines `input(kk)`, the k-th input (its
// normalised row in workgroup memory, or a vector in storage).

// Σ_kk input(kk) · w[kk, col0 + t] for t < PER_WORD over every row of k: the
// whole dot products of this invocation's columns, in every slice. The
// kernel defines `input(kk)`. Call from uniform control flow.
const DOT_ROWS: u32 = 4u; // rows whose weights one invocation loads before using any (`profile::DOT_ROWS` in Rust)

fn split_dot(tid: u32, wide: u32, k: u32, n: u32, col0: u32) -> array<f32, PER_WORD> {
    let slices = WG / wide;
    var acc: array<f32, PER_WORD>;
    // DOT_ROWS (4) rows a round, each row's weights and input in a value of its
    // own, all loaded before any is used. No private array is filled in a
    // loop: a GPU's compiler may place one in local memory, where each store
    // waits for its load and the round's loads go one at a time.
    for (var k0 = tid / wide; k0 < k; k0 = k0 + DOT_ROWS * slices) {
        let k1 = k0 + slices;
        let k2 = k1 + slices;
        let k3 = k2 + slices;
        let w0 = row_weights(k0, k, n, col0);
        let w1 = row_weights(k1, k, n, col0);
        let w2 = row_weights(k2, k, n, col0);
        let w3 = row_weights(k3, k, n, col0);
        let x0 = input_or_zero(k0, k);
        let x1 = input_or_zero(k1, k);
        let x2 = input_or_zero(k2, k);
        let x3 = input_or_zero(k3, k);
        acc = add_row(acc, x0, w0);
        acc = add_row(acc, x1, w1);
        acc = add_row(acc, x2, w2);
        acc = add_row(acc, x3, w3);
    }
    return reduce_slices(tid, wide, acc);
}

// The kk-th input, 0 past k.
fn input_or_zero(kk: u32, k: u32) -> f32 {
    if (kk < k) {
        return input(kk);
    }
    return 0.0;
}

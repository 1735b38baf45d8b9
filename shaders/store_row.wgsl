// store_row: how the prefill matmuls (matmul, matmul_tiled) write one row of
// an invocation's 4 × 4 block. Needs the kernel's `p` (m, n), `bias` and `out`.

// out[row, col0 + c] = acc[c] + bias[col0 + c] for the block's four columns
// inside the matrix (edge invocations computed clamped extras: not stored).
fn store_row(row: u32, col0: u32, acc: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    for (var c = 0u; c < 4u && col0 + c < p.n; c = c + 1u) {
        out[row * p.n + col0 + c] = faulted(acc[c] + bias[col0 + c]);
    }
}

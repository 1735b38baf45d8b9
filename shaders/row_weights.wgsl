// row_weights: one invocation's weights of a row, a word at a time, and add_row,
// which adds them times one input into its sums, for the
// projections that give each invocation the PER_WORD columns of one weight
// word (row_dot's rows that straddle words, and split_k's kernels): one load feeds PER_WORD
// products. On a CPU adapter a lane's load costs far more than its products
// (lavapipe: some 25 cycles a 4-byte load), so words, not weights, are the
// count that matters there.
// Needs the kernel's `w` (Conv1D [in, out] layout) and the format's snippet.
// The PER_WORD weights of row kk at columns col0.. (0 past row k or column n):
// one word load where rows are whole words (n a multiple of PER_WORD), else
// one load per element (rows straddle words).
fn row_weights(kk: u32, k: u32, n: u32, col0: u32) -> array<f32, PER_WORD> {
    var v: array<f32, PER_WORD>;
    if (kk >= k || col0 >= n) {
        return v;
    }
    let i = kk * n + col0;
    if (n % PER_WORD == 0u) {
        return w_unpack(w[i / PER_WORD], i, col0, 1u);
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        if (col0 + t < n) {
            v[t] = w_load(i + t, col0 + t);
        }
    }
    return v;
}

// acc[t] + x · w[t] for each of the invocation's columns.
fn add_row(acc: array<f32, PER_WORD>, x: f32, w: array<f32, PER_WORD>) -> array<f32, PER_WORD> {
    var a = acc;
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        a[t] = a[t] + x * w[t];
    }
    return a;
}

// Columns per invocation of the cpu profile's fused decode kernels that
// start with a norm: whole words and whole pairs (rms_qkv's rotary pairs,
// rms_swiglu's gate and up), so PER_WORD, or 2 where a word holds one weight
// (f32: also halves ln_qkv's and ln_fc_gelu's workgroups, each of which runs
// the LayerNorm). `pair_cols` in Rust.
const PAIR_COLS: u32 = PER_WORD + PER_WORD % 2u;

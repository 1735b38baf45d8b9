// matmul_split (a batched decode step, real GPUs): out = x @ w + bias for up
// to MAX_ROWS rows of x (one per sequence), k split over the workgroup
// (shaders/split_k.wgsl): every weight is read once for all the rows.
//   out[r, col] = sum_k x[r, k] * w[k, col] + bias[col]
// `row_weights` comes from shaders/row_weights.wgsl, `reduce_slices` from shaders/split_k.wgsl, `Word`,
// `w_load`, `w_unpack` and `PER_WORD` from the weight format's snippet.
// CPU twin: matmul's.
//
// Every row's sums and every round's weights are values of their own (a0..a7,
// w0..w3), never a private array indexed by a loop variable: a GPU's compiler
// may place such an array in local memory, where each store waits for its
// load and a round's loads go one at a time (an H200 ran a batch of 8 at
// 19 ms a step that way, slower than 8 single steps).

struct Params {
    m: u32,    // rows of x (sequences), at most MAX_ROWS
    k: u32,    // inputs
    n: u32,    // outputs
    wide: u32, // column groups side by side (see split_k.wgsl)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (m, k)
@group(0) @binding(2) var<storage, read> w: array<Word>;        // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // (m, n)

override WG: u32 = 256u;
const MAX_ROWS: u32 = 8u; // `matmul_split::MAX_ROWS` in Rust
const_assert UNROLL == 4u; // the loop below names its four rows of weights

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let col0 = split_col0(wid.x, tid, p.wide);
    let slices = WG / p.wide;
    let m = min(p.m, MAX_ROWS);
    var a0: array<f32, PER_WORD>; // row 0's sums of this invocation's columns (a1..a7: rows 1..7)
    var a1: array<f32, PER_WORD>;
    var a2: array<f32, PER_WORD>;
    var a3: array<f32, PER_WORD>;
    var a4: array<f32, PER_WORD>;
    var a5: array<f32, PER_WORD>;
    var a6: array<f32, PER_WORD>;
    var a7: array<f32, PER_WORD>;
    // UNROLL (4) rows of the weights a round, loaded before any is used.
    for (var k0 = tid / p.wide; k0 < p.k; k0 = k0 + UNROLL * slices) {
        let w0 = row_weights(k0, p.k, p.n, col0);
        let w1 = row_weights(k0 + slices, p.k, p.n, col0);
        let w2 = row_weights(k0 + 2u * slices, p.k, p.n, col0);
        let w3 = row_weights(k0 + 3u * slices, p.k, p.n, col0);
        a0 = add_round(a0, 0u, k0, slices, w0, w1, w2, w3);
        if (m > 1u) { a1 = add_round(a1, 1u, k0, slices, w0, w1, w2, w3); }
        if (m > 2u) { a2 = add_round(a2, 2u, k0, slices, w0, w1, w2, w3); }
        if (m > 3u) { a3 = add_round(a3, 3u, k0, slices, w0, w1, w2, w3); }
        if (m > 4u) { a4 = add_round(a4, 4u, k0, slices, w0, w1, w2, w3); }
        if (m > 5u) { a5 = add_round(a5, 5u, k0, slices, w0, w1, w2, w3); }
        if (m > 6u) { a6 = add_round(a6, 6u, k0, slices, w0, w1, w2, w3); }
        if (m > 7u) { a7 = add_round(a7, 7u, k0, slices, w0, w1, w2, w3); }
    }
    // `m` comes from the uniform Params: these branches are uniform, as
    // reduce_slices' barriers need.
    write_row(0u, tid, col0, a0);
    if (m > 1u) { write_row(1u, tid, col0, a1); }
    if (m > 2u) { write_row(2u, tid, col0, a2); }
    if (m > 3u) { write_row(3u, tid, col0, a3); }
    if (m > 4u) { write_row(4u, tid, col0, a4); }
    if (m > 5u) { write_row(5u, tid, col0, a5); }
    if (m > 6u) { write_row(6u, tid, col0, a6); }
    if (m > 7u) { write_row(7u, tid, col0, a7); }
}

// x[r, kk], 0 past k.
fn x_at(r: u32, kk: u32) -> f32 {
    if (kk < p.k) {
        return x[r * p.k + kk];
    }
    return 0.0;
}

// Row r's sums plus one round: x[r, k0 + u·slices] · w_u for u = 0..3, the
// four inputs loaded before any is used.
fn add_round(
    acc: array<f32, PER_WORD>,
    r: u32,
    k0: u32,
    slices: u32,
    w0: array<f32, PER_WORD>,
    w1: array<f32, PER_WORD>,
    w2: array<f32, PER_WORD>,
    w3: array<f32, PER_WORD>,
) -> array<f32, PER_WORD> {
    let x0 = x_at(r, k0);
    let x1 = x_at(r, k0 + slices);
    let x2 = x_at(r, k0 + 2u * slices);
    let x3 = x_at(r, k0 + 3u * slices);
    var a = acc;
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        a[t] = a[t] + x0 * w0[t] + x1 * w1[t] + x2 * w2[t] + x3 * w3[t];
    }
    return a;
}

// Row r's totals over the slices, written with the bias by the first slice.
// Call from uniform control flow.
fn write_row(r: u32, tid: u32, col0: u32, acc: array<f32, PER_WORD>) {
    let sums = reduce_slices(tid, p.wide, acc);
    if (tid < p.wide) {
        for (var t = 0u; t < PER_WORD; t = t + 1u) {
            let col = col0 + t;
            if (col < p.n) {
                out[r * p.n + col] = faulted(sums[t] + bias[col]);
            }
        }
    }
}

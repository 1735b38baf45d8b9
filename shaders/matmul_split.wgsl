// matmul_split (a batched decode step, real GPUs): out = x @ w + bias for up
// to MAX_ROWS rows of x (one per sequence), k split over the workgroup
// (shaders/split_k.wgsl): every weight is read once for all the rows.
//   out[r, col] = sum_k x[r, k] * w[k, col] + bias[col]
// `row_weights` and `reduce_slices` come from shaders/split_k.wgsl, `Word`,
// `w_load`, `w_unpack` and `PER_WORD` from the weight format's snippet.
// CPU twin: matmul's.

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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let col0 = split_col0(wid.x, tid, p.wide);
    let slices = WG / p.wide;
    let m = min(p.m, MAX_ROWS);
    var acc: array<array<f32, PER_WORD>, MAX_ROWS>; // (rows, columns of this invocation)
    for (var k0 = tid / p.wide; k0 < p.k; k0 = k0 + UNROLL * slices) {
        // UNROLL rows' weights and every row of x there, loaded before any is used.
        var ws: array<array<f32, PER_WORD>, UNROLL>;
        var xs: array<array<f32, MAX_ROWS>, UNROLL>;
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let kk = k0 + u * slices;
            ws[u] = row_weights(kk, p.k, p.n, col0);
            for (var r = 0u; r < m; r = r + 1u) {
                xs[u][r] = 0.0; // written every round: a loop's `var` is not zeroed again everywhere
                if (kk < p.k) {
                    xs[u][r] = x[r * p.k + kk];
                }
            }
        }
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            for (var r = 0u; r < m; r = r + 1u) {
                for (var t = 0u; t < PER_WORD; t = t + 1u) {
                    acc[r][t] = acc[r][t] + xs[u][r] * ws[u][t];
                }
            }
        }
    }
    for (var r = 0u; r < m; r = r + 1u) {
        let sums = reduce_slices(tid, p.wide, acc[r]);
        if (tid < p.wide) {
            for (var t = 0u; t < PER_WORD; t = t + 1u) {
                let col = col0 + t;
                if (col < p.n) {
                    out[r * p.n + col] = faulted(sums[t] + bias[col]);
                }
            }
        }
    }
}

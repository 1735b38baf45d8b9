// matmul (prefill): out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]
// w is in Hugging Face Conv1D layout [in, out], so neighbouring threads read
// neighbouring columns of w. Each thread computes a 4×4 block in registers:
// no workgroup memory and no barriers (barriers are slow on software adapters).
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl).

struct Params {
    m: u32, // rows of x (tokens)
    k: u32, // inputs
    n: u32, // outputs
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (m, k)
@group(0) @binding(2) var<storage, read> w: array<Word>;        // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // (m, n)

const TILE: u32 = 4u; // outputs per thread along each axis

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col0 = gid.x * TILE;
    let row0 = gid.y * TILE;
    if (col0 >= p.n || row0 >= p.m) {
        return;
    }
    var acc: array<array<f32, 4>, 4>; // (row, col), zero-initialised
    for (var kk = 0u; kk < p.k; kk = kk + 1u) {
        var a: array<f32, 4>;
        var b: array<f32, 4>;
        for (var t = 0u; t < TILE; t = t + 1u) {
            // Clamped indices keep edge threads in bounds; their extra results are not stored.
            a[t] = x[min(row0 + t, p.m - 1u) * p.k + kk];
            let col = min(col0 + t, p.n - 1u);
            b[t] = w_load(kk * p.n + col, col);
        }
        for (var r = 0u; r < TILE; r = r + 1u) {
            for (var c = 0u; c < TILE; c = c + 1u) {
                acc[r][c] = acc[r][c] + a[r] * b[c];
            }
        }
    }
    for (var r = 0u; r < TILE; r = r + 1u) {
        for (var c = 0u; c < TILE; c = c + 1u) {
            if (row0 + r < p.m && col0 + c < p.n) {
                out[(row0 + r) * p.n + col0 + c] = faulted(acc[r][c] + bias[col0 + c]);
            }
        }
    }
}

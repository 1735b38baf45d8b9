// matmul (prefill): out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]
// w is in Hugging Face Conv1D layout [in, out], so neighbouring threads read
// neighbouring columns of w. Each thread computes a 4×4 block in registers:
// no workgroup memory and no barriers (barriers are slow on software adapters).
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl),
// `store_row` from shaders/store_row.wgsl.

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

// A 4 × 4 block is four vec4 sums (one per row), not a 4 × 4 private array:
// software adapters (SwiftShader) keep arrays indexed in loops in memory,
// where vec4 arithmetic stays in registers.
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col0 = gid.x * TILE;
    let row0 = gid.y * TILE;
    if (col0 >= p.n || row0 >= p.m) {
        return;
    }
    // Clamped indices keep edge threads in bounds; their extra results are not stored.
    let cols = min(vec4<u32>(col0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.n - 1u));
    let rows = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.m - 1u)) * p.k;
    var acc0 = vec4<f32>(); // (4 cols) sums of row row0
    var acc1 = vec4<f32>(); // (4 cols) row0 + 1
    var acc2 = vec4<f32>(); // (4 cols) row0 + 2
    var acc3 = vec4<f32>(); // (4 cols) row0 + 3
    for (var kk = 0u; kk < p.k; kk = kk + 1u) {
        let i = kk * p.n;
        let b = vec4<f32>(
            w_load(i + cols.x, cols.x),
            w_load(i + cols.y, cols.y),
            w_load(i + cols.z, cols.z),
            w_load(i + cols.w, cols.w),
        );
        acc0 = acc0 + x[rows.x + kk] * b;
        acc1 = acc1 + x[rows.y + kk] * b;
        acc2 = acc2 + x[rows.z + kk] * b;
        acc3 = acc3 + x[rows.w + kk] * b;
    }
    store_row(row0, col0, acc0);
    store_row(row0 + 1u, col0, acc1);
    store_row(row0 + 2u, col0, acc2);
    store_row(row0 + 3u, col0, acc3);
}

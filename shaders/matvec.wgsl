// matvec (decode): out[n] = sum_k x[k] * w[k, n] + bias[n]
// One token per decode step, so a vector times a Conv1D [in, out] matrix.
// One thread per output column: neighbouring threads read neighbouring columns.
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl).

struct Params {
    k: u32, // inputs
    n: u32, // outputs
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (k)
@group(0) @binding(2) var<storage, read> w: array<Word>;        // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // (n)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    if (col >= p.n) {
        return;
    }
    var acc = 0.0;
    for (var kk = 0u; kk < p.k; kk = kk + 1u) {
        acc = acc + x[kk] * w_load(kk * p.n + col, col);
    }
    out[col] = acc + bias[col];
}

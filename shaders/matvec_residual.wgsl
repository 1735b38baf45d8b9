// matvec_residual (decode): a block's output projection and the residual add
// in one dispatch (two in prefill: matmul, residual_add).
//   x[col] += sum_k y[k] * w[k, col] + bias[col]   (one thread per column)
// Used twice per block: attention's c_proj (k = n_embd) and the MLP's c_proj
// (k = n_inner). Neighbouring threads read neighbouring columns of the
// Conv1D [in, out] matrix. `Word` and `w_load` come from the weight format's snippet.

struct Params {
    k: u32, // inputs
    n: u32, // outputs (n_embd)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;       // (k) the block's output before projection
@group(0) @binding(2) var<storage, read> w: array<Word>;      // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;    // (n)
@group(0) @binding(4) var<storage, read_write> x: array<f32>; // (n) residual stream

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    if (col >= p.n) {
        return;
    }
    var acc = 0.0;
    for (var kk = 0u; kk < p.k; kk = kk + 1u) {
        acc = acc + y[kk] * w_load(kk * p.n + col, col);
    }
    x[col] = faulted(x[col] + (acc + bias[col]));
}

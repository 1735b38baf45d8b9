// matvec_residual (decode): a block's output projection and the residual add
// in one dispatch (two in prefill: matmul, residual_add).
//   x[col] += sum_k y[k] * w[k, col] + bias[col]
// One invocation per weight word of a row: the PER_WORD columns col0.. of
// that word, so one load of y[k] and one of a word feed PER_WORD products
// (`row_dot`, shaders/row_dot.wgsl): on a CPU adapter, where this
// profile runs, loads cost far more than products. Each column still adds
// its products in order of k, so the sums are the twin's, as before.
// Used twice per block: attention's c_proj (k = n_embd) and the MLP's c_proj
// (k = n_inner). Neighbouring invocations read neighbouring words of the
// Conv1D [in, out] matrix. `Word`, `Lanes`, `lane_at` and `PER_WORD` come
// from the weight format's snippet.

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

// row_dot's k-th input.
fn input(kk: u32) -> f32 {
    return y[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col0 = gid.x * PER_WORD;
    if (col0 >= p.n) {
        return;
    }
    let acc = row_dot(p.k, p.n, col0); // (PER_WORD) the sums of columns col0..
    for (var t = 0u; t < PER_WORD && col0 + t < p.n; t = t + 1u) {
        let col = col0 + t;
        x[col] = faulted(x[col] + (lane_at(acc, t) + bias[col]));
    }
}

// matvec_residual_split (decode, real GPUs): matvec_residual's projection and
// residual add, the projection's k split over the workgroup (shaders/split_k.wgsl):
//   x[col] += sum_k y[k] * w[k, col] + bias[col]
// `split_dot` comes from shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack`
// and `PER_WORD` from the weight format's snippet. CPU twin: matvec_residual's.

struct Params {
    k: u32,    // inputs
    n: u32,    // outputs (n_embd)
    wide: u32, // column groups side by side (see split_k.wgsl)
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;       // (k) the block's output before projection
@group(0) @binding(2) var<storage, read> w: array<Word>;      // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;    // (n)
@group(0) @binding(4) var<storage, read_write> x: array<f32>; // (n) residual stream

override WG: u32 = 256u;

fn input(kk: u32) -> f32 {
    return y[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let col0 = split_col0(wid.x, tid, p.wide);
    let sums = split_dot(tid, p.wide, p.k, p.n, col0);
    if (tid >= p.wide) {
        return;
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        let col = col0 + t;
        if (col < p.n) {
            x[col] = faulted(x[col] + (sums[t] + bias[col]));
        }
    }
}

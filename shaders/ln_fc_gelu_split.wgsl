// ln_fc_gelu_split (decode, real GPUs): ln_fc_gelu's LayerNorm → c_fc →
// GELU, the projection's k split over the workgroup (shaders/split_k.wgsl):
//   xn = layernorm(x) · weight + bias           (every workgroup, into workgroup memory)
//   fc[col] = gelu_new(sum_k xn[k] * w[k, col] + bias[col])
// `normalise_row` comes from shaders/ln_stats.wgsl, `split_dot` from
// shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack` and `PER_WORD` from the
// weight format's snippet; the GELU is gelu.wgsl's. CPU twin: ln_fc_gelu's.

struct Params {
    n_embd: u32,
    n: u32,    // outputs (n_inner)
    eps: f32,
    wide: u32, // column groups side by side (see split_k.wgsl)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (n_embd) residual stream
@group(0) @binding(2) var<storage, read> ln: array<f32>;       // (2, n_embd) ln_2 weight, then bias
@group(0) @binding(3) var<storage, read> w: array<Word>;       // (n_embd, n) in the weight format
@group(0) @binding(4) var<storage, read> bias: array<f32>;     // (n)
@group(0) @binding(5) var<storage, read_write> fc: array<f32>; // (n)

override WG: u32 = 256u;

fn input(kk: u32) -> f32 {
    return xn[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    normalise_row(tid, p.n_embd, p.eps);
    let col0 = split_col0(wid.x, tid, p.wide);
    let sums = split_dot(tid, p.wide, p.n_embd, p.n, col0);
    if (tid >= p.wide) {
        return;
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        let col = col0 + t;
        if (col < p.n) {
            let v = sums[t] + bias[col];
            let inner = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
            fc[col] = faulted(0.5 * v * (1.0 + tanh(inner)));
        }
    }
}

// ln_fc_gelu (decode): the block's second LayerNorm, the MLP's first
// projection and its GELU in one dispatch (three in prefill: layernorm,
// matmul, gelu).
//   xn = layernorm(x) · weight + bias           (every workgroup, into its row of x)
//   fc[col] = gelu_new(sum_k xn[k] * w[k, col] + bias[col])
// One invocation per PAIR_COLS columns (`pair_dot`), as ln_qkv's.
// `Word` and `PER_WORD` come from the weight format's snippet, `PAIR_COLS` from shaders/row_weights.wgsl, `normalise_row_in_x`
// and `row_in_x` from shaders/row_in_x.wgsl; the GELU is gelu.wgsl's, clamped the same way.

struct Params {
    n_embd: u32,
    n: u32, // outputs (n_inner)
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;       // (1 + workgroups, n_embd) residual stream, then each workgroup's normalised row
@group(0) @binding(2) var<storage, read> ln: array<f32>;       // (2, n_embd) ln_2 weight, then bias
@group(0) @binding(3) var<storage, read> w: array<Word>;       // (n_embd, n) in the weight format
@group(0) @binding(4) var<storage, read> bias: array<f32>;     // (n)
@group(0) @binding(5) var<storage, read_write> fc: array<f32>; // (n)

override WG: u32 = 64u;

// pair_dot's k-th input.
fn input(kk: u32) -> f32 {
    return row_in_x(kk);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    normalise_row_in_x(tid, wid.x, p.n_embd, p.eps);
    let col0 = (wid.x * WG + tid) * PAIR_COLS;
    if (col0 >= p.n) {
        return;
    }
    let acc = pair_dot(p.n_embd, p.n, col0); // (PAIR_COLS) the sums of columns col0..
    for (var t = 0u; t < PAIR_COLS && col0 + t < p.n; t = t + 1u) {
        let col = col0 + t;
        let v = acc[t] + bias[col];
        let inner = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
        fc[col] = faulted(0.5 * v * (1.0 + tanh(inner)));
    }
}

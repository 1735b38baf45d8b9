// rms_swiglu (decode, the Llama family): the block's second RMSNorm, the
// MLP's gate and up projection and SwiGLU in one dispatch (three in
// prefill: rms_norm, matmul, swiglu).
//   xn = rms_norm(x) · weight                          (every workgroup, into its row of x)
//   gate_up[col] = sum_k xn[k] * w[k, col] + bias[col]
//   act[i] = silu(gate_up[2i]) · gate_up[2i + 1]
// Gate and up are neighbouring columns (model/weights_llama.rs lays them in
// turn). One invocation owns PAIR_COLS columns: whole weight words of a row
// (`pair_dot`: one load feeds PER_WORD products, as matvec_residual's)
// and whole gate, up pairs, so a pair never leaves the invocation.
// `Word` and `PER_WORD` come from the weight format's snippet,
// `rms_row_in_x` and `row_in_x` from shaders/row_in_x.wgsl, `PAIR_COLS`
// from shaders/row_weights.wgsl, `pair_dot` from shaders/row_dot.wgsl; the gate is
// swiglu.wgsl's. CPU twin: rms_norm, matmul and swiglu in a row.

struct Params {
    n_embd: u32,
    n: u32, // outputs (n_inner); w has 2n columns
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;        // (1 + workgroups, n_embd) residual stream, then each workgroup's normalised row
@group(0) @binding(2) var<storage, read> ln: array<f32>;        // (n_embd + 2 * n) the norm's weight, then the gate, up bias
@group(0) @binding(3) var<storage, read> w: array<Word>;        // (n_embd, 2 * n) in the weight format: gate, up in turn
@group(0) @binding(4) var<storage, read_write> act: array<f32>; // (n)

override WG: u32 = 64u;

// pair_dot's k-th input.
fn input(kk: u32) -> f32 {
    return row_in_x(kk);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    rms_row_in_x(tid, wid.x, p.n_embd, p.eps);
    let n = 2u * p.n;
    let col0 = (wid.x * WG + tid) * PAIR_COLS;
    if (col0 >= n) {
        return;
    }
    let acc = pair_dot(p.n_embd, n, col0); // (PAIR_COLS) the sums of columns col0..
    // Each gate column (even) writes its output; its up is the next column.
    for (var c = 0u; c < PAIR_COLS && col0 + c < n; c = c + 2u) {
        let col = col0 + c;
        act[col / 2u] = faulted(gated(acc[c] + ln[p.n_embd + col], acc[c + 1u] + ln[p.n_embd + col + 1u]));
    }
}

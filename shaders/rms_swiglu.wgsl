// rms_swiglu (decode, the Llama family): the block's second RMSNorm, the
// MLP's gate and up projection and SwiGLU in one dispatch (three in
// prefill: rms_norm, matmul, swiglu).
//   xn = rms_norm(x) · weight                          (every workgroup, into workgroup memory)
//   gate_up[col] = sum_k xn[k] * w[k, col] + bias[col]  (one invocation per column)
//   act[i] = silu(gate_up[2i]) · gate_up[2i + 1]
// Gate and up are neighbouring columns (model/weights_llama.rs lays them in
// turn): the invocations of a pair, tid and tid ^ 1, meet in workgroup memory. `Word` and `w_load` come from the
// weight format's snippet, `rms_row` (into workgroup `xn`) from
// shaders/ln_stats.wgsl; the gate is swiglu.wgsl's. CPU twin: rms_norm,
// matmul and swiglu in a row.

struct Params {
    n_embd: u32,
    n: u32, // outputs (n_inner); w has 2n columns
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n_embd) residual stream
@group(0) @binding(2) var<storage, read> ln: array<f32>;        // (n_embd + 2 * n) the norm's weight, then the gate, up bias
@group(0) @binding(3) var<storage, read> w: array<Word>;        // (n_embd, 2 * n) in the weight format: gate, up in turn
@group(0) @binding(4) var<storage, read_write> act: array<f32>; // (n)

override WG: u32 = 64u;

var<workgroup> pair: array<f32, WG>; // (WG) each invocation's sum, for its gate's up

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    rms_row(tid, p.n_embd, p.eps);
    let n = 2u * p.n;
    let col = wid.x * WG + tid;
    var acc = 0.0;
    if (col < n) {
        for (var kk = 0u; kk < p.n_embd; kk = kk + 1u) {
            acc = acc + xn[kk] * w_load(kk * n + col, col);
        }
        acc = acc + ln[p.n_embd + col];
    }
    pair[tid] = acc;
    workgroupBarrier();
    // Each gate column (even) writes its output; its up is the next column.
    if (col < n && col % 2u == 0u) {
        act[col / 2u] = faulted(gated(acc, pair[tid + 1u]));
    }
}

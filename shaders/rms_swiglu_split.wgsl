// rms_swiglu_split (decode, real GPUs): rms_swiglu's RMSNorm → gate and up
// projection → SwiGLU, the projection's k split over the workgroup
// (shaders/split_k.wgsl). Gate and up are neighbouring columns: in one
// weight word where a word holds two or more (f16, bf16, int8, int4), else
// (f32) the sums of invocations tid and tid ^ 1, met in workgroup memory.
// `rms_row` comes from shaders/ln_stats.wgsl, `split_dot` from
// shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack` and `PER_WORD` from the
// weight format's snippet. CPU twin: rms_swiglu's.

struct Params {
    n_embd: u32,
    n: u32, // outputs (n_inner); w has 2n columns
    eps: f32,
    wide: u32, // column groups side by side (see split_k.wgsl; even)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n_embd) residual stream
@group(0) @binding(2) var<storage, read> ln: array<f32>;        // (n_embd + 2 * n) the norm's weight, then the gate, up bias
@group(0) @binding(3) var<storage, read> w: array<Word>;        // (n_embd, 2 * n) in the weight format: gate, up in turn
@group(0) @binding(4) var<storage, read_write> act: array<f32>; // (n)

override WG: u32 = 256u;

fn input(kk: u32) -> f32 {
    return xn[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    rms_row(tid, p.n_embd, p.eps);
    let n = 2u * p.n;
    let col0 = split_col0(wid.x, tid, p.wide);
    var sums = split_dot(tid, p.wide, p.n_embd, n, col0);
    let other = neighbour_sum(tid, sums[0]);
    if (tid >= p.wide) {
        return;
    }
    // Each gate column (even) writes its output; its up is the next column.
    for (var t = 0u; t < PER_WORD; t = t + 2u) {
        let col = col0 + t;
        var up = other;
        if (PER_WORD > 1u) {
            up = sums[t + 1u];
        }
        if (col < n && col % 2u == 0u) {
            let b = p.n_embd + col;
            act[col / 2u] = faulted(gated(sums[t] + ln[b], up + ln[b + 1u]));
        }
    }
}

// ln_stats: the mean and 1/std of one row of `x`, for every kernel that starts
// with a LayerNorm (layernorm, ln_qkv, ln_fc_gelu and their _split shapes); they declare `x`, `ln`
// (weight, then bias) and `WG`. The fused decode kernels also normalise the
// token's row into workgroup memory here (`normalise_row`).
// One workgroup per row; the mean first, then the variance of the centred
// values (two passes over the row: more accurate than E[x²] - E[x]² in f32).
// CPU twin: the statistics in `layernorm::run_cpu`.

var<workgroup> partial: array<f32, WG>; // (WG) per-thread partial sums

// Sum of `value` over the workgroup; every thread gets the result. Up to 64
// threads (the kernels shaped for CPU adapters), each thread adds the WG
// partial sums itself, in the same order: two barriers instead of a tree's
// log2(WG) + 2 (barriers are what software adapters pay for, and the fused
// decode kernels run this in every workgroup). Above 64 (real GPUs: the
// split kernels' 256), a tree: no thread reads more than two partials per
// step. WG is a pipeline constant, so the branch costs nothing.
fn workgroup_sum(tid: u32, value: f32) -> f32 {
    partial[tid] = value;
    workgroupBarrier();
    var total = 0.0;
    if (WG > 64u) {
        for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
            if (tid < stride) {
                partial[tid] = partial[tid] + partial[tid + stride];
            }
            workgroupBarrier();
        }
        total = partial[0];
    } else {
        for (var i = 0u; i < WG; i = i + 1u) {
            total = total + partial[i];
        }
    }
    workgroupBarrier(); // before `partial` is reused
    return total;
}

// (mean, 1 / sqrt(var + eps)) of x[base .. base + n]. Call from uniform control flow.
fn ln_stats(tid: u32, base: u32, n: u32, eps: f32) -> vec2<f32> {
    var sum = 0.0;
    for (var c = tid; c < n; c = c + WG) {
        sum = sum + x[base + c];
    }
    let mean = workgroup_sum(tid, sum) / f32(n);
    var sq = 0.0;
    for (var c = tid; c < n; c = c + WG) {
        let d = x[base + c] - mean;
        sq = sq + d * d;
    }
    return vec2<f32>(mean, inverseSqrt(workgroup_sum(tid, sq) / f32(n) + eps));
}

const MAX_EMBD: u32 = 2048u; // `LN_MAX_EMBD` in Rust; GPT-2 XL has 1600
var<workgroup> xn: array<f32, MAX_EMBD>; // (n) the normalised row, for ln_qkv and ln_fc_gelu

// xn = layernorm(x[0 .. n]) · weight + bias, for the whole workgroup. Every
// workgroup of a fused kernel does this itself: n reads and two reductions,
// small next to the n × WG weights it reads after. Call from uniform control flow.
fn normalise_row(tid: u32, n: u32, eps: f32) {
    let s = ln_stats(tid, 0u, n, eps);
    for (var c = tid; c < n; c = c + WG) {
        xn[c] = (x[c] - s.x) * s.y * ln[c] + ln[n + c];
    }
    workgroupBarrier();
}

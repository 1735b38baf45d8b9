// ln_stats: the mean and 1/std of one row of `x`, for every kernel that starts
// with a LayerNorm (layernorm, ln_qkv, ln_fc_gelu and their _split shapes); they declare `x`, `ln`
// (weight, then bias) and `WG`. The split decode kernels also normalise the
// token's row into workgroup memory here (`normalise_row`; the Llama
// family's, whose `ln` starts with the RMSNorm's weight, `rms_row`); the
// cpu profile's write theirs to x (shaders/row_in_x.wgsl).
// One workgroup per row; the mean first, then the variance of the centred
// values (two passes over the row: more accurate than E[x²] - E[x]² in f32).
// CPU twin: the statistics in `layernorm::run_cpu`.

var<workgroup> partial: array<f32, WG>; // (WG) per-thread partial sums
var<workgroup> summed: f32; // the sum, up to 64 threads

// Sum of `value` over the workgroup; every thread gets the result. Up to 64
// threads (the kernels shaped for CPU adapters), thread 0 adds the WG
// partial sums in order and the others read its total: two barriers
// instead of a tree's log2(WG) + 2 (barriers are what software adapters pay
// for, and the fused decode kernels run this in every workgroup), and WG
// reads of workgroup memory, not WG a thread (SwiftShader reads it slowly).
// `summed` is rewritten only after the next call's first barrier, which
// every thread reaches after reading it. Above 64 (real GPUs: the split
// kernels' 256), a tree: no thread reads more than two partials per step.
// WG is a pipeline constant, so the branch costs nothing.
fn workgroup_sum(tid: u32, value: f32) -> f32 {
    partial[tid] = value;
    workgroupBarrier();
    if (WG > 64u) {
        for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
            if (tid < stride) {
                partial[tid] = partial[tid] + partial[tid + stride];
            }
            workgroupBarrier();
        }
        let total = partial[0];
        workgroupBarrier(); // before `partial` is reused
        return total;
    }
    if (tid == 0u) {
        var total = 0.0;
        for (var i = 0u; i < WG; i = i + 1u) {
            total = total + partial[i];
        }
        summed = total;
    }
    workgroupBarrier();
    return summed;
}

const MAX_EMBD: u32 = 2048u; // `LN_MAX_EMBD` in Rust; GPT-2 XL has 1600
var<workgroup> xn: array<f32, MAX_EMBD>; // (n) the row, staged; normalised by normalise_row

// (mean, 1 / sqrt(var + eps)) of x[base .. base + n]. Call from uniform
// control flow. Above 64 invocations (real GPUs) the row is staged in `xn`
// first, ROW_LOADS elements an invocation a round, all loaded before any is
// stored: a few dependent global loads per workgroup (each a DRAM or L2
// latency there) instead of one per element per pass; the passes then read
// workgroup memory, each invocation its own elements. Up to 64 (CPU
// adapters) the passes read x itself: staging measured 2.5× slower on
// lavapipe. WG is a pipeline constant, so the branches cost nothing.
fn ln_stats(tid: u32, base: u32, n: u32, eps: f32) -> vec2<f32> {
    if (WG > 64u) {
        stage_row(tid, base, n);
    }
    var sum = 0.0;
    for (var c = tid; c < n; c = c + WG) {
        sum = sum + row_at(base, c);
    }
    let mean = workgroup_sum(tid, sum) / f32(n);
    var sq = 0.0;
    for (var c = tid; c < n; c = c + WG) {
        let d = row_at(base, c) - mean;
        sq = sq + d * d;
    }
    return vec2<f32>(mean, inverseSqrt(workgroup_sum(tid, sq) / f32(n) + eps));
}

// 1 / sqrt(mean(x[base .. base + n]²) + eps): RMSNorm's one statistic (rms_norm,
// rms_row, rms_row_in_x), the row staged on real GPUs as ln_stats stages it.
// Call from uniform control flow.
fn rms_stats(tid: u32, base: u32, n: u32, eps: f32) -> f32 {
    if (WG > 64u) {
        stage_row(tid, base, n);
    }
    var sq = 0.0;
    for (var c = tid; c < n; c = c + WG) {
        let v = row_at(base, c);
        sq = sq + v * v;
    }
    return inverseSqrt(workgroup_sum(tid, sq) / f32(n) + eps);
}

// Element c of the row: staged (real GPUs) or from x.
fn row_at(base: u32, c: u32) -> f32 {
    if (WG > 64u) {
        return xn[c];
    }
    return x[base + c];
}

// x[base ..][.. n] into xn, this invocation's elements.
fn stage_row(tid: u32, base: u32, n: u32) {
    for (var c0 = tid; c0 < n; c0 = c0 + ROW_LOADS * WG) {
        let v0 = x_or_zero(base, c0, n);
        let v1 = x_or_zero(base, c0 + WG, n);
        let v2 = x_or_zero(base, c0 + 2u * WG, n);
        let v3 = x_or_zero(base, c0 + 3u * WG, n);
        stage(c0, v0, n);
        stage(c0 + WG, v1, n);
        stage(c0 + 2u * WG, v2, n);
        stage(c0 + 3u * WG, v3, n);
    }
}

const ROW_LOADS: u32 = 4u; // elements of a row an invocation loads before storing any

fn x_or_zero(base: u32, c: u32, n: u32) -> f32 {
    if (c < n) {
        return x[base + c];
    }
    return 0.0;
}

fn stage(c: u32, v: f32, n: u32) {
    if (c < n) {
        xn[c] = v;
    }
}

// xn = layernorm(x[0 .. n]) · weight + bias, for the whole workgroup. Every
// workgroup of a fused kernel does this itself: n reads and two reductions,
// small next to the n × WG weights it reads after. On real GPUs the weight
// and bias come ROW_LOADS elements a round too, and each invocation
// rewrites its own staged elements. Call from uniform control flow.
fn normalise_row(tid: u32, n: u32, eps: f32) {
    let s = ln_stats(tid, 0u, n, eps);
    if (WG > 64u) {
        for (var c0 = tid; c0 < n; c0 = c0 + ROW_LOADS * WG) {
            let g0 = ln_or_zero(c0, n);
            let g1 = ln_or_zero(c0 + WG, n);
            let g2 = ln_or_zero(c0 + 2u * WG, n);
            let g3 = ln_or_zero(c0 + 3u * WG, n);
            let b0 = ln_or_zero(n + c0, 2u * n);
            let b1 = ln_or_zero(n + c0 + WG, 2u * n);
            let b2 = ln_or_zero(n + c0 + 2u * WG, 2u * n);
            let b3 = ln_or_zero(n + c0 + 3u * WG, 2u * n);
            normalise(c0, n, s, g0, b0);
            normalise(c0 + WG, n, s, g1, b1);
            normalise(c0 + 2u * WG, n, s, g2, b2);
            normalise(c0 + 3u * WG, n, s, g3, b3);
        }
    } else {
        for (var c = tid; c < n; c = c + WG) {
            xn[c] = (x[c] - s.x) * s.y * ln[c] + ln[n + c];
        }
    }
    workgroupBarrier();
}

fn ln_or_zero(i: u32, end: u32) -> f32 {
    if (i < end) {
        return ln[i];
    }
    return 0.0;
}

fn normalise(c: u32, n: u32, s: vec2<f32>, gain: f32, shift: f32) {
    if (c < n) {
        xn[c] = (xn[c] - s.x) * s.y * gain + shift;
    }
}

// xn = rms_norm(x[0 .. n]) · weight (`ln[0 .. n]`), for the whole workgroup:
// normalise_row's RMSNorm, as rms_norm.wgsl computes it (one reduction; the
// row staged on real GPUs, each invocation rewriting its own elements). Call
// from uniform control flow.
fn rms_row(tid: u32, n: u32, eps: f32) {
    let rstd = rms_stats(tid, 0u, n, eps);
    for (var c = tid; c < n; c = c + WG) {
        xn[c] = ln[c] * (row_at(0u, c) * rstd);
    }
    workgroupBarrier();
}

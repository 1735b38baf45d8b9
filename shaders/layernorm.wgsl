// layernorm: out[row, :] = (x[row, :] - mean) / sqrt(var + eps) * weight + bias
// One workgroup per row; mean first, then the variance of the centred values
// (two passes over the row: more accurate than E[x²] - E[x]² in f32).

struct Params {
    n_rows: u32,
    n_embd: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n_rows, n_embd)
@group(0) @binding(2) var<storage, read> weight: array<f32>;    // (n_embd)
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (n_embd)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // (n_rows, n_embd)

override WG: u32 = 64u;
var<workgroup> partial: array<f32, WG>; // (WG) per-thread partial sums

// Sum of `partial` over the workgroup; every thread gets the result.
fn workgroup_sum(tid: u32, value: f32) -> f32 {
    partial[tid] = value;
    workgroupBarrier();
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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = wid.x; // dispatched with exactly n_rows workgroups
    let base = row * p.n_embd;
    var sum = 0.0;
    for (var c = tid; c < p.n_embd; c = c + WG) {
        sum = sum + x[base + c];
    }
    let mean = workgroup_sum(tid, sum) / f32(p.n_embd);
    var sq = 0.0;
    for (var c = tid; c < p.n_embd; c = c + WG) {
        let d = x[base + c] - mean;
        sq = sq + d * d;
    }
    let rstd = inverseSqrt(workgroup_sum(tid, sq) / f32(p.n_embd) + p.eps);
    for (var c = tid; c < p.n_embd; c = c + WG) {
        out[base + c] = (x[base + c] - mean) * rstd * weight[c] + bias[c];
    }
}

// rms_norm: out[row, :] = x[row, :] / sqrt(mean(x[row, :]²) + eps) · weight
// RMSNorm (the Llama family's norm: no mean taken away, no shift). One
// workgroup per row; its statistic from `rms_stats`, the row staged in
// workgroup memory on real GPUs as `ln_stats` stages it (shaders/ln_stats.wgsl).

struct Params {
    n_rows: u32,
    n_embd: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n_rows, n_embd)
@group(0) @binding(2) var<storage, read> ln: array<f32>;        // (n_embd) weight
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (n_rows, n_embd)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = wid.x; // dispatched with exactly n_rows workgroups
    let base = row * p.n_embd;
    // staged on real GPUs: each invocation then reads back only its own elements
    let rstd = rms_stats(tid, base, p.n_embd, p.eps);
    for (var c = tid; c < p.n_embd; c = c + WG) {
        out[base + c] = faulted(ln[c] * (row_at(base, c) * rstd));
    }
}

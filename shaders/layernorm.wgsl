// layernorm: out[row, :] = (x[row, :] - mean) / sqrt(var + eps) * weight + bias
// One workgroup per row; `ln_stats` (shaders/ln_stats.wgsl) gives mean and 1/std.
// In prefill and before the LM head; decode fuses the block's two LayerNorms
// into the matvec that follows them (ln_qkv, ln_fc_gelu).

struct Params {
    n_rows: u32,
    n_embd: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (n_rows, n_embd)
@group(0) @binding(2) var<storage, read> ln: array<f32>;        // (2, n_embd) weight, then bias
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (n_rows, n_embd)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = wid.x; // dispatched with exactly n_rows workgroups
    let base = row * p.n_embd;
    let s = ln_stats(tid, base, p.n_embd, p.eps);
    for (var c = tid; c < p.n_embd; c = c + WG) {
        out[base + c] = faulted((x[base + c] - s.x) * s.y * ln[c] + ln[p.n_embd + c]);
    }
}

// row_in_x: where the cpu profile's fused decode kernels (ln_qkv, ln_fc_gelu,
// rms_qkv, rms_swiglu) keep the token's normalised row: in x's spare rows,
// one a workgroup, not in workgroup memory. In a decode step x is
// (1 + workgroups, n_embd): row 0 the residual stream, row 1 + w workgroup
// w's normalised copy (the scratch has a pass's rows; `fused_x_rows` in
// Rust sizes it). SwiftShader reads workgroup memory in the dot's loop far
// slower than a storage buffer: bundled model, f16, µs a run, ln_qkv
// 1925–2726 → 958–1323, ln_fc_gelu 2780–4123 → 1390–1671 with the dot
// reading x. Reusing x's binding keeps rms_qkv within WebGPU's 8 storage
// buffers. The kernels declare `x` (read_write), `ln` and `WG`;
// `ln_stats` and `rms_stats` come from shaders/ln_stats.wgsl.
// CPU twin: the kernels' `normalised`.

var<private> xn_at: u32; // where this workgroup's normalised row starts in x

// x[1 + wid] = layernorm(x[0 .. n]) · weight + bias, each invocation its own
// elements, then made visible to the whole workgroup. Call from uniform
// control flow.
fn normalise_row_in_x(tid: u32, wid: u32, n: u32, eps: f32) {
    let s = ln_stats(tid, 0u, n, eps);
    xn_at = (1u + wid) * n;
    for (var c = tid; c < n; c = c + WG) {
        x[xn_at + c] = (x[c] - s.x) * s.y * ln[c] + ln[n + c];
    }
    storageBarrier();
}

// x[1 + wid] = rms_norm(x[0 .. n]) · weight (`ln[0 .. n]`), as rms_norm.wgsl
// computes it (one reduction). Call from uniform control flow.
fn rms_row_in_x(tid: u32, wid: u32, n: u32, eps: f32) {
    let rstd = rms_stats(tid, 0u, n, eps);
    xn_at = (1u + wid) * n;
    for (var c = tid; c < n; c = c + WG) {
        x[xn_at + c] = ln[c] * (x[c] * rstd);
    }
    storageBarrier();
}

// Element kk of this workgroup's normalised row: the kernels' `input`.
fn row_in_x(kk: u32) -> f32 {
    return x[xn_at + kk];
}

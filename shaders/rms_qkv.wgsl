// rms_qkv (decode, the Llama family): the block's first RMSNorm, the QKV
// projection, RoPE and the K/V write in one dispatch (four in prefill:
// rms_norm, matmul, rope, kv_write).
//   xn = rms_norm(x) · weight                          (every workgroup, into its row of x)
//   qkv[col] = sum_k xn[k] * w[k, col] + bias[col]
//   q and k pairs turned by this position's angles; key_cache[slot], value_cache[slot] = k, v
// A rotary pair is two neighbouring columns (model/weights_llama.rs lays
// "rotate half"'s dimensions d and d + head_size / 2 side by side). One
// invocation owns PAIR_COLS columns: whole weight words of a row
// (`pair_dot`: one load feeds PER_WORD products, as matvec_residual's) and
// whole rotary pairs, so a pair never leaves the invocation. The norm's weight and the
// qkv bias share one binding: with the cache, the turns and a scaled
// format's scales this kernel binds WebGPU's 8 storage buffers.
// `Word` and `PER_WORD` come from the weight format's snippet,
// `PAIR_COLS` from shaders/row_weights.wgsl, `pair_dot` from shaders/row_dot.wgsl, `rms_row_in_x` and
// `row_in_x` from shaders/row_in_x.wgsl, `store_qkv` from
// shaders/kv_slot.wgsl, `pair_turned` from shaders/qkv_pair.wgsl.
// CPU twin: rms_norm, matmul, rope and kv_write in a row.

struct Params {
    n_embd: u32,
    slot: u32, // cache slot of this token (its position, unless a policy evicted)
    eps: f32,
    group: u32, // query heads per K/V head
    head_size: u32,
    pos: u32, // this token's position: its row of `turns`
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;                // (1 + workgroups, n_embd) residual stream, then each workgroup's normalised row
@group(0) @binding(2) var<storage, read> ln: array<f32>;                // (2 * n_embd + 2 * kv_dim) the norm's weight, then the qkv bias
@group(0) @binding(3) var<storage, read> w: array<Word>;                // (n_embd, n_embd + 2 * kv_dim) in the weight format
@group(0) @binding(4) var<storage, read_write> qkv: array<f32>;         // (n_embd + 2 * kv_dim): q | k | v, kv_dim = n_embd / group
@group(0) @binding(5) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(6) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd / group)
@group(0) @binding(7) var<storage, read> turns: array<vec2<f32>>;       // (n_positions, head_size / 2) cos, sin

override WG: u32 = 64u;

// pair_dot's k-th input.
fn input(kk: u32) -> f32 {
    return row_in_x(kk);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    rms_row_in_x(tid, wid.x, p.n_embd, p.eps);
    let n = p.n_embd + 2u * (p.n_embd / p.group);
    let col0 = (wid.x * WG + tid) * PAIR_COLS;
    if (col0 >= n) {
        return;
    }
    let acc = pair_dot(p.n_embd, n, col0); // (PAIR_COLS) the sums of columns col0..
    for (var c = 0u; c < PAIR_COLS && col0 + c < n; c = c + 2u) {
        let col = col0 + c;
        let own = acc[c] + ln[p.n_embd + col];
        var other = 0.0; // the pair's second column (none past n)
        if (col + 1u < n) {
            other = acc[c + 1u] + ln[p.n_embd + col + 1u];
            store_qkv(col + 1u, pair_turned(col + 1u, other, own));
        }
        store_qkv(col, pair_turned(col, own, other));
    }
}

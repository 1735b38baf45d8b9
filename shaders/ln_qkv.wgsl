// ln_qkv (decode): the block's first LayerNorm, the QKV projection and the K/V
// write in one dispatch (three in prefill: layernorm, matmul, kv_write).
//   xn = layernorm(x) · weight + bias           (every workgroup, into its row of x)
//   qkv[col] = sum_k xn[k] * w[k, col] + bias[col]
//   key_cache[slot] = qkv[n_embd ..], value_cache[slot] = qkv[n_embd + kv_dim ..]
// One invocation per PAIR_COLS columns (`pair_dot`): a weight word of a row,
// one load feeding PER_WORD products, as matvec_residual's; f32 (one weight
// a word) takes two, which halves its workgroups, each of which runs the
// LayerNorm (SwiftShader, bundled model, f32, µs a run: ln_qkv 3120–3270 → 1880–2090,
// ln_fc_gelu 3760–4430 → 2490–2670; lavapipe level).
// Each workgroup normalises the token's row itself: n_embd reads and two
// reductions, small next to the n_embd × WG weights it reads after.
// `Word` and `PER_WORD` come from the weight format's snippet, `PAIR_COLS` from shaders/row_weights.wgsl,
// `normalise_row_in_x` and `row_in_x` from shaders/row_in_x.wgsl,
// `store_qkv` from shaders/kv_slot.wgsl.

struct Params {
    n_embd: u32,
    slot: u32, // cache slot of this token (its position, unless a policy evicted)
    eps: f32,
    group: u32,     // query heads per K/V head
    head_size: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;                // (1 + workgroups, n_embd) residual stream, then each workgroup's normalised row
@group(0) @binding(2) var<storage, read> ln: array<f32>;                // (2, n_embd) ln_1 weight, then bias
@group(0) @binding(3) var<storage, read> w: array<Word>;                // (n_embd, n_embd + 2 * kv_dim) in the weight format
@group(0) @binding(4) var<storage, read> bias: array<f32>;              // (n_embd + 2 * kv_dim)
@group(0) @binding(5) var<storage, read_write> qkv: array<f32>;         // (n_embd + 2 * kv_dim): q | k | v, kv_dim = n_embd / group
@group(0) @binding(6) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(7) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd / group)

override WG: u32 = 64u;

// pair_dot's k-th input.
fn input(kk: u32) -> f32 {
    return row_in_x(kk);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    normalise_row_in_x(tid, wid.x, p.n_embd, p.eps);
    let kv_dim = p.n_embd / p.group;
    let n = p.n_embd + 2u * kv_dim;
    let col0 = (wid.x * WG + tid) * PAIR_COLS;
    if (col0 >= n) {
        return;
    }
    let acc = pair_dot(p.n_embd, n, col0); // (PAIR_COLS) the sums of columns col0..
    for (var t = 0u; t < PAIR_COLS && col0 + t < n; t = t + 1u) {
        store_qkv(col0 + t, acc[t] + bias[col0 + t]);
    }
}

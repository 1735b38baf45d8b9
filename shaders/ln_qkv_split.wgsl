// ln_qkv_split (decode, real GPUs): ln_qkv's LayerNorm → QKV projection →
// K/V write, the projection's k split over the workgroup (shaders/split_k.wgsl):
//   xn = layernorm(x) · weight + bias           (every workgroup, into workgroup memory)
//   qkv[col] = sum_k xn[k] * w[k, col] + bias[col]
//   key_cache[slot] = qkv[n_embd ..], value_cache[slot] = qkv[n_embd + kv_dim ..]
// `normalise_row` (a tree reduction at WG 256) comes from shaders/ln_stats.wgsl,
// `split_dot` from shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack` and
// `PER_WORD` from the weight format's snippet. CPU twin: ln_qkv's.

struct Params {
    n_embd: u32,
    slot: u32, // cache slot of this token (its position, unless a policy evicted)
    eps: f32,
    wide: u32, // column groups side by side (see split_k.wgsl)
    group: u32, // query heads per K/V head
    head_size: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;                 // (n_embd) residual stream
@group(0) @binding(2) var<storage, read> ln: array<f32>;                // (2, n_embd) ln_1 weight, then bias
@group(0) @binding(3) var<storage, read> w: array<Word>;                // (n_embd, n_embd + 2 * kv_dim) in the weight format
@group(0) @binding(4) var<storage, read> bias: array<f32>;              // (n_embd + 2 * kv_dim)
@group(0) @binding(5) var<storage, read_write> qkv: array<f32>;         // (n_embd + 2 * kv_dim): q | k | v, kv_dim = n_embd / group
@group(0) @binding(6) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(7) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd / group)

override WG: u32 = 256u;

fn input(kk: u32) -> f32 {
    return xn[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    normalise_row(tid, p.n_embd, p.eps);
    let kv_dim = p.n_embd / p.group;
    let n = p.n_embd + 2u * kv_dim;
    let col0 = split_col0(wid.x, tid, p.wide);
    let sums = split_dot(tid, p.wide, p.n_embd, n, col0);
    if (tid >= p.wide) {
        return;
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        let col = col0 + t;
        if (col < n) {
            store_qkv(col, sums[t] + bias[col]);
        }
    }
}

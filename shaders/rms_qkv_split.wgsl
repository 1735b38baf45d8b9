// rms_qkv_split (decode, real GPUs): rms_qkv's RMSNorm → QKV projection →
// RoPE → K/V write, the projection's k split over the workgroup
// (shaders/split_k.wgsl). A rotary pair is two neighbouring columns: in one
// weight word where a word holds two or more (f16, bf16, int8, int4), else
// (f32) the sums of invocations tid and tid ^ 1, met in workgroup memory.
// `rms_row` (a tree reduction at WG 256) comes from shaders/ln_stats.wgsl,
// `split_dot` from shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack` and
// `PER_WORD` from the weight format's snippet, `store_qkv` from shaders/kv_slot.wgsl,
// `pair_turned` from shaders/qkv_pair.wgsl. CPU twin: rms_qkv's.

struct Params {
    n_embd: u32,
    slot: u32, // cache slot of this token (its position, unless a policy evicted)
    eps: f32,
    wide: u32, // column groups side by side (see split_k.wgsl; even)
    group: u32, // query heads per K/V head
    head_size: u32,
    pos: u32, // this token's position: its row of `turns`
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;                 // (n_embd) residual stream
@group(0) @binding(2) var<storage, read> ln: array<f32>;                // (2 * n_embd + 2 * kv_dim) the norm's weight, then the qkv bias
@group(0) @binding(3) var<storage, read> w: array<Word>;                // (n_embd, n_embd + 2 * kv_dim) in the weight format
@group(0) @binding(4) var<storage, read_write> qkv: array<f32>;         // (n_embd + 2 * kv_dim): q | k | v, kv_dim = n_embd / group
@group(0) @binding(5) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(6) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd / group)
@group(0) @binding(7) var<storage, read> turns: array<vec2<f32>>;       // (n_positions, head_size / 2) cos, sin

override WG: u32 = 256u;

fn input(kk: u32) -> f32 {
    return xn[kk];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    rms_row(tid, p.n_embd, p.eps);
    let n = p.n_embd + 2u * (p.n_embd / p.group);
    let col0 = split_col0(wid.x, tid, p.wide);
    var sums = split_dot(tid, p.wide, p.n_embd, n, col0);
    let other = neighbour_sum(tid, sums[0]);
    if (tid >= p.wide) {
        return;
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        let col = col0 + t;
        if (col < n) {
            var partner = other;
            if (PER_WORD > 1u) {
                partner = sums[t ^ 1u];
            }
            let own = sums[t] + ln[p.n_embd + col];
            store_qkv(col, pair_turned(col, own, partner + ln[p.n_embd + (col ^ 1u)]));
        }
    }
}

// kv_write: copies the k and v parts of each qkv row into the layer's KV cache
// at its position, where they stay for the rest of the session. `row0` offsets
// the rows read from `qkv` (a batched decode step: one dispatch per sequence).

struct Params {
    n_rows: u32,
    n_embd: u32,
    slot0: u32, // cache slot of the first qkv row (its position, unless a policy evicted)
    row0: u32, // first row of qkv this dispatch reads
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;                // (row0 + n_rows, 3 * n_embd): q | k | v
@group(0) @binding(2) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd)
@group(0) @binding(3) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= p.n_rows * p.n_embd) {
        return;
    }
    let row = i / p.n_embd;
    let c = i % p.n_embd;
    let src = (p.row0 + row) * 3u * p.n_embd;
    let dst = (p.slot0 + row) * p.n_embd + c;
    key_cache[dst] = faulted(qkv[src + p.n_embd + c]);
    value_cache[dst] = faulted(qkv[src + 2u * p.n_embd + c]);
}

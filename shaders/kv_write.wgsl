// kv_write: copies the k and v parts of each qkv row into the layer's KV cache
// at its slot, where they stay for the rest of the session (a row of qkv holds
// one K and one V head per group of query heads). `row0` offsets the rows
// read from `qkv` (a batched decode step: one dispatch per sequence).

struct Params {
    n_rows: u32,
    n_embd: u32,
    slot0: u32, // cache slot of the first qkv row (its position, unless a policy evicted)
    row0: u32, // first row of qkv this dispatch reads
    head_size: u32,
    group: u32, // query heads per K/V head
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;                // (row0 + n_rows, n_embd + 2 * kv_dim): q | k | v
@group(0) @binding(2) var<storage, read_write> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(3) var<storage, read_write> value_cache: array<f32>; // (n_positions, n_embd / group)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    let kv_dim = p.n_embd / p.group;
    if (i >= p.n_rows * kv_dim) {
        return;
    }
    let row = i / kv_dim;
    let c = i % kv_dim;
    let src = (p.row0 + row) * (p.n_embd + 2u * kv_dim) + p.n_embd + c;
    let dst = (p.slot0 + row) * kv_dim + c;
    key_cache[dst] = faulted(qkv[src]);
    value_cache[dst] = faulted(qkv[src + kv_dim]);
}

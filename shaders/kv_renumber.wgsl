// kv_renumber: StreamingLLM's positions within the cache (`kv_policy`'s
// `positions:cache`). When a token leaves, every kept token after it moves
// one place down, so its key turns back by one position: each pair
// (2i, 2i + 1) of each K head of a listed slot turns by position 1's angle
// for pair i, negated. The values and the queries are not touched (a pass
// turns its own rows at their places: rope, rms_qkv).
// One invocation per pair of a listed slot's key.

struct Params {
    n: u32,          // pairs: renumbered slots · kv_dim / 2
    kv_dim: u32,     // numbers in a key row
    head_size: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> key_cache: array<f32>; // (slots, kv_dim)
@group(0) @binding(2) var<storage, read> renumbered: array<u32>;      // (slots) the listed slots first
@group(0) @binding(3) var<storage, read> turns: array<vec2<f32>>;     // (n_positions, head_size / 2) cos, sin

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let half = p.head_size / 2u;
    let per_slot = p.kv_dim / 2u;
    let slot = renumbered[i / per_slot];
    let pair = i % per_slot;
    let a = slot * p.kv_dim + 2u * pair;
    let t = turns[half + pair % half]; // position 1
    let turn = turned(key_cache[a], key_cache[a + 1u], vec2<f32>(t.x, -t.y)); // back by its angle
    key_cache[a] = faulted(turn.x);
    key_cache[a + 1u] = faulted(turn.y);
}

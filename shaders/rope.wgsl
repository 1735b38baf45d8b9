// rope: rotary positions (Su et al. 2021), in place: each query and key head
// of a row turns dimension pair (2i, 2i + 1) by its position's angle for pair
// i; the values are not touched. "Rotate half"'s pair (i, i + head_size / 2)
// are neighbours in the model's weights (model/weights_llama.rs).
// One invocation per pair of q and k ((n_embd + kv_dim) / 2 pairs a row). The angles' cosines
// and sines come from a table made on the CPU when the model opens (f64
// cos/sin of the f32 angle, as transformers forms it), so the GPU and the
// CPU engine turn by the same numbers.

struct Params {
    n: u32,         // pairs: n_rows · (n_embd + kv_dim) / 2
    n_embd: u32,    // q columns of a row
    head_size: u32,
    pos0: u32,      // position of the pass's first row
    row0: u32,      // first row of qkv this dispatch works on (a batch's sequence)
    kv_dim: u32,    // k (and v) columns of a row: one K head per group of query heads
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>; // (row0 + n_rows, n_embd + 2 * kv_dim) q | k | v
@group(0) @binding(2) var<storage, read> turns: array<vec2<f32>>; // (n_positions, head_size / 2) cos, sin

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let half = p.head_size / 2u;
    let per_row = (p.n_embd + p.kv_dim) / 2u;
    let row = i / per_row;
    let pair = i % per_row;       // over the heads of q | k
    let head = pair / half;
    let d = pair % half;
    let a = (p.row0 + row) * (p.n_embd + 2u * p.kv_dim) + head * p.head_size + 2u * d;
    let turn = turned(qkv[a], qkv[a + 1u], turns[(p.pos0 + row) * half + d]);
    qkv[a] = faulted(turn.x);
    qkv[a + 1u] = faulted(turn.y);
}

// embedding: x[row, c] = wte[tokens[row], c] + wpe[pos0 + row, c] (GPT-2), or
// wte[tokens[row], c] alone (`positions` 0: a model with rotary positions, whose
// `wpe` binding is a placeholder)
// First kernel of the forward pass. Token ids are checked on the CPU before upload.
// `wte` may be split by vocabulary rows over several bindings (a GPU's binding
// limit): this dispatch holds rows v0 .. v0 + n_vocab and writes only the rows
// of x whose token lies there. `row0` offsets the rows of `tokens` and `x`: a
// batched decode step embeds each sequence's token at its own position.
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl).

struct Params {
    n_rows: u32, // tokens in this pass
    n_embd: u32,
    pos0: u32,   // position of the first row
    v0: u32,     // first vocabulary row of this shard
    n_vocab: u32, // vocabulary rows in this shard
    row0: u32,   // first row of tokens and x this dispatch works on
    positions: u32, // 1: add the position table wpe; 0: none (rotary positions)
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;  // (row0 + n_rows)
@group(0) @binding(2) var<storage, read> w: array<Word>;      // (n_vocab, n_embd) wte rows v0.., in the weight format
@group(0) @binding(3) var<storage, read> wpe: array<f32>;     // (n_positions, n_embd)
@group(0) @binding(4) var<storage, read_write> x: array<f32>; // (row0 + n_rows, n_embd)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Large element counts are spread over a 2-D grid (65535 workgroups per dimension).
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n_rows * p.n_embd) {
        return;
    }
    let row = i / p.n_embd;
    let c = i % p.n_embd;
    let token = tokens[p.row0 + row];
    if (token < p.v0 || token - p.v0 >= p.n_vocab) {
        return; // another shard's row
    }
    let t = token - p.v0;
    var pe = 0.0;
    if (p.positions != 0u) {
        pe = wpe[(p.pos0 + row) * p.n_embd + c];
    }
    x[p.row0 * p.n_embd + i] = faulted(w_load(t * p.n_embd + c, t) + pe);
}

// embedding: x[row, c] = wte[tokens[row], c] + wpe[pos0 + row, c]
// First kernel of the forward pass. Token ids are checked on the CPU before upload.
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl).

struct Params {
    n_rows: u32, // tokens in this pass
    n_embd: u32,
    pos0: u32,   // position of the first row
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;  // (n_rows)
@group(0) @binding(2) var<storage, read> w: array<Word>;      // (vocab_size, n_embd) wte, in the weight format
@group(0) @binding(3) var<storage, read> wpe: array<f32>;     // (n_positions, n_embd)
@group(0) @binding(4) var<storage, read_write> x: array<f32>; // (n_rows, n_embd)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Large element counts are spread over a 2-D grid (65535 workgroups per dimension).
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= p.n_rows * p.n_embd) {
        return;
    }
    let row = i / p.n_embd;
    let c = i % p.n_embd;
    let token = tokens[row];
    x[i] = w_load(token * p.n_embd + c, token) + wpe[(p.pos0 + row) * p.n_embd + c];
}

// swiglu: out[row, i] = silu(gate[row, i]) · up[row, i] (`gated`): the Llama
// family's MLP activation, between its gate|up projection (one matmul, gate
// and up in turn in each row: g0, u0, g1, u1, …, as model/weights_llama.rs
// lays the weights out) and its down projection.

struct Params {
    n: u32,       // outputs: n_rows · n_inner
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate_up: array<f32>;   // (n_rows, 2 * n_inner) gate, up in turn
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (n_rows, n_inner)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let g = gate_up[2u * i]; // row · 2 n_inner + 2 · column
    let u = gate_up[2u * i + 1u];
    out[i] = faulted(gated(g, u));
}

// kv_mass: the heavy-hitter policy's running totals (H2O). Each cache slot
// adds the attention this layer's query rows gave it, over every head:
//   mass[j] += Σ_h Σ_row probs[h, row, j]      (j < n_cols)
// The totals stay on the device that computes the probabilities; the
// session reads them back only when the cache is full and one token must
// leave. One thread per slot, summing heads then rows in the CPU twin's
// order (`kv_mass::run_cpu`), so both engines rank the slots alike.

struct Params {
    n_rows: u32,  // query rows of the pass
    n_cols: u32,  // slots per row of `probs`: keys0 + n_rows
    n_head: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> probs: array<f32>;      // (n_head, n_rows, n_cols)
@group(0) @binding(2) var<storage, read_write> mass: array<f32>; // (capacity) per slot

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = grid_1d_index(gid, nwg);
    if (j >= p.n_cols) {
        return;
    }
    var s = 0.0;
    for (var h = 0u; h < p.n_head; h = h + 1u) {
        for (var row = 0u; row < p.n_rows; row = row + 1u) {
            s = s + probs[(h * p.n_rows + row) * p.n_cols + j];
        }
    }
    mass[j] = faulted(mass[j] + s);
}

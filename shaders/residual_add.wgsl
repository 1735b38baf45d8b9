// residual_add: x += y, the residual stream taking a block's output.

@group(0) @binding(0) var<uniform> p: Elements;
@group(0) @binding(1) var<storage, read> y: array<f32>;       // (n)
@group(0) @binding(2) var<storage, read_write> x: array<f32>; // (n)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    x[i] = faulted(x[i] + y[i]);
}

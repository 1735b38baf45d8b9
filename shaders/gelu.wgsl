// gelu: x = gelu_new(x) in place, the tanh form GPT-2 uses:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))

@group(0) @binding(0) var<uniform> p: Elements;
@group(0) @binding(1) var<storage, read_write> x: array<f32>; // (n)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = grid_1d_index(gid, nwg);
    if (i >= p.n) {
        return;
    }
    let v = x[i];
    // Clamped because some drivers compute tanh as a ratio of exponentials that
    // overflows to NaN for large inputs; tanh(±10) is already ±1 in f32.
    let inner = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
    x[i] = faulted(0.5 * v * (1.0 + tanh(inner)));
}

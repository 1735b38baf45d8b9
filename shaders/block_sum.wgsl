// block_sum: the device's read rate. Each workgroup sums its block of `data`
// (wrapping u32 adds: exact in any order) and writes one value: the kernel
// reads every byte once and writes almost nothing, so its time is the time
// to read the buffer (a buffer-to-buffer copy also writes every byte).
// Invocations read neighbouring 16-byte words (coalesced), UNROLL in flight
// each; the workgroup's sums meet in a tree. CPU twin: `block_sum::run_cpu`.

struct Params {
    n: u32,         // words of 16 bytes in data
    per_group: u32, // words per workgroup (the last takes what is left)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> data: array<vec4<u32>>;   // (n)
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;   // (workgroups)

override WG: u32 = 256u;
const UNROLL: u32 = 4u;

var<workgroup> partial: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let first = wid.x * p.per_group;
    let end = min(first + p.per_group, p.n);
    var acc = vec4<u32>(0u);
    for (var i0 = first + tid; i0 < end; i0 = i0 + UNROLL * WG) {
        // Loaded before any is used. Every element is written each round: a
        // `var` declared in a loop is not zeroed again on every platform
        // (Chromium's compiler keeps the last round's value).
        var v: array<vec4<u32>, UNROLL>;
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            v[u] = vec4<u32>(0u);
            if (i0 + u * WG < end) {
                v[u] = data[i0 + u * WG];
            }
        }
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            acc = acc + v[u];
        }
    }
    partial[tid] = acc.x + acc.y + acc.z + acc.w;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (tid < h) {
            partial[tid] = partial[tid] + partial[tid + h];
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        sums[wid.x] = faulted_bits(partial[0]);
    }
}

// block_sum: the device's read rate. Each workgroup sums its block of `data`
// (wrapping u32 adds: exact in any order) and writes one value: the kernel
// reads every byte once and writes almost nothing, so its time is the time
// to read the buffer (a buffer-to-buffer copy also writes every byte).
// Invocations read neighbouring 16-byte words (coalesced), UNROLL in flight
// each, each load its own named value with a constant trip count (a private
// array filled in a loop serialised the loads on an H200, and this yardstick
// read 2.9 TB/s on a 4.8 TB/s card); the workgroup's sums meet in a tree.
// CPU twin: `block_sum::run_cpu`.

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
const_assert UNROLL == 4u; // the loads below are written out one by one: v0 … v3

var<workgroup> partial: array<u32, WG>;

// Word `i` of the block ending at `end`, or zeros past it: the index is
// clamped so every load is in bounds and none waits on a branch.
fn word(i: u32, end: u32) -> vec4<u32> {
    return select(vec4<u32>(0u), data[min(i, end - 1u)], i < end);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let first = wid.x * p.per_group;
    let end = min(first + p.per_group, p.n);
    var acc = vec4<u32>(0u);
    for (var i0 = first + tid; i0 < end; i0 = i0 + UNROLL * WG) {
        // All four issued before any is added.
        let v0 = word(i0, end);
        let v1 = word(i0 + WG, end);
        let v2 = word(i0 + 2u * WG, end);
        let v3 = word(i0 + 3u * WG, end);
        acc = acc + ((v0 + v1) + (v2 + v3));
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

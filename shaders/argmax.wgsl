// argmax: the greedy token of one row of logits, found on the device so a
// greedy step reads back a few hundred bytes instead of the whole row (201 KB
// for GPT-2). Each workgroup takes a block of the row and writes the first
// largest logit of it that is a number, with its index (or no index, 0xffffffff,
// for a block of NaNs); the CPU picks the largest of the blocks' (the first on
// a tie; every block NaN: the row's last index), which is
// `engine::sample::argmax` of the row exactly. Four loads in flight per
// invocation, each its own named value; the block's candidates meet in a tree.
// CPU twin: `argmax::run_cpu`.

struct Params {
    n: u32,         // logits in the row (vocab_size)
    per_group: u32, // logits per workgroup (the last takes what is left)
    row0: u32,      // the row's first element in `logits`
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;        // (rows, n)
@group(0) @binding(2) var<storage, read_write> best: array<vec2<u32>>; // (workgroups) (index, value bits)

override WG: u32 = 256u;
const UNROLL: u32 = 4u;
const_assert UNROLL == 4u; // the loads below are written out one by one: v0 … v3
const NONE: u32 = 0xffffffffu;

var<workgroup> cand: array<vec2<u32>, WG>; // (WG) each invocation's (index, value bits)

fn is_nan(bits: u32) -> bool {
    return (bits & 0x7fffffffu) > 0x7f800000u;
}

// The better of two candidates: a number beats none; the larger value; the
// lower index on a tie.
fn better(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (a.x == NONE) {
        return b;
    }
    if (b.x == NONE) {
        return a;
    }
    let va = bitcast<f32>(a.y);
    let vb = bitcast<f32>(b.y);
    if (vb > va || (vb == va && b.x < a.x)) {
        return b;
    }
    return a;
}

// Element i of the block ending at `end` as a candidate (none past it, or a NaN).
fn candidate(i: u32, end: u32) -> vec2<u32> {
    let bits = bitcast<u32>(logits[p.row0 + min(i, end - 1u)]);
    return select(vec2<u32>(NONE, 0u), vec2<u32>(i, bits), i < end && !is_nan(bits));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let first = wid.x * p.per_group;
    let end = min(first + p.per_group, p.n);
    var mine = vec2<u32>(NONE, 0u);
    for (var i0 = first + tid; i0 < end; i0 = i0 + UNROLL * WG) {
        let v0 = candidate(i0, end);
        let v1 = candidate(i0 + WG, end);
        let v2 = candidate(i0 + 2u * WG, end);
        let v3 = candidate(i0 + 3u * WG, end);
        mine = better(mine, better(better(v0, v1), better(v2, v3)));
    }
    cand[tid] = mine;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (tid < h) {
            cand[tid] = better(cand[tid], cand[tid + h]);
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        best[wid.x] = vec2<u32>(faulted_bits(cand[0].x), faulted_bits(cand[0].y));
    }
}

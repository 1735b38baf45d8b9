// attention_probs: the attention weights themselves, for the views that show
// them (only ever run on request; the forward pass's attention never stores them).
// probs[h, row, j] = softmax_j(q[row, h] · k[j, h] * scale) for j ≤ keys0 + row, 0 after.
// One workgroup per (row, head). Each thread scores keys tid, tid + WG, … into
// its own entries of `probs` (the row is the scratch: nothing of size
// n_positions lives in workgroup memory), the row's max and sum are reduced
// across the workgroup, then each thread normalises its own entries.

@group(0) @binding(0) var<uniform> p: AttentionParams;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (n_rows, n_embd + 2 * kv_dim): q | k | v
@group(0) @binding(2) var<storage, read> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(3) var<storage, read_write> probs: array<f32>; // (n_head, n_rows, keys0 + n_rows)

override WG: u32 = 64u; // a power of two: the reductions halve it
const MAX_HEAD_SIZE: u32 = 256u;
const NEG_BIG: f32 = -3.0e38;

var<workgroup> q: array<f32, MAX_HEAD_SIZE>; // (head_size) this row's query, pre-scaled
var<workgroup> red: array<f32, WG>;          // (WG) one partial max or sum per thread

// The reduction of every thread's `v` (max when `is_max`, else sum), on every thread.
fn reduce(tid: u32, v: f32, is_max: bool) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (tid < stride) {
            if (is_max) {
                red[tid] = max(red[tid], red[tid + stride]);
            } else {
                red[tid] = red[tid] + red[tid + stride];
            }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier(); // everyone has read it before `red` is reused
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = wid.x;  // dispatched with exactly (n_rows, n_head) workgroups
    let head = wid.y;
    let hs = p.head_size;
    let h0 = head * hs;
    for (var d = tid; d < hs; d = d + WG) {
        q[d] = qkv[row * (p.n_embd + 2u * (p.n_embd / p.group)) + h0 + d] * p.scale;
    }
    workgroupBarrier();

    let n_keys = p.keys0 + row + 1u; // causal: keys 0 ..= keys0 + row
    let n_cols = p.keys0 + p.n_rows; // keys per row of `probs`
    let base = (head * p.n_rows + row) * n_cols;
    var m = NEG_BIG;
    for (var j = tid; j < n_keys; j = j + WG) {
        var s = 0.0;
        for (var d = 0u; d < hs; d = d + 1u) {
            s = s + q[d] * key_cache[j * (p.n_embd / p.group) + (head / p.group) * hs + d];
        }
        probs[base + j] = s;
        m = max(m, s);
    }
    let row_max = reduce(tid, m, true);
    var l = 0.0;
    for (var j = tid; j < n_keys; j = j + WG) {
        let e = exp(probs[base + j] - row_max);
        probs[base + j] = e;
        l = l + e;
    }
    let total = reduce(tid, l, false);
    for (var j = tid; j < n_cols; j = j + WG) {
        if (j < n_keys) {
            probs[base + j] = faulted(probs[base + j] / total);
        } else {
            probs[base + j] = faulted(0.0); // a query never sees the keys after it
        }
    }
}

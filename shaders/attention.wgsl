// attention: causal multi-head attention of each query row over the KV cache.
// y[row, h] = softmax_j(q[row, h] · k[j, h] * scale) · v[j, h]  for j ≤ keys0 + row
// One workgroup per (row, head). Keys are taken WG at a time: each thread scores
// one key, then every thread folds the tile into a running softmax (max, sum,
// weighted values) for the output dims it owns. Nothing of size n_positions is
// stored, so any context length fits. `row0` offsets the rows in `qkv` and `y`:
// a batched decode step runs one dispatch per sequence, row `row0` of the
// batch, over that sequence's own cache.

@group(0) @binding(0) var<uniform> p: AttentionParams;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (row0 + n_rows, n_embd + 2 * kv_dim): q | k | v
@group(0) @binding(2) var<storage, read> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(3) var<storage, read> value_cache: array<f32>; // (n_positions, n_embd / group)
@group(0) @binding(4) var<storage, read_write> y: array<f32>;     // (row0 + n_rows, n_embd)

override WG: u32 = 64u;
const MAX_HEAD_SIZE: u32 = 256u;
const DIMS_PER_THREAD: u32 = 4u; // MAX_HEAD_SIZE / 64, the smallest WG used
const NEG_BIG: f32 = -3.0e38;    // "minus infinity" that keeps exp() and max() finite

var<workgroup> q: array<f32, MAX_HEAD_SIZE>; // (head_size) this row's query, pre-scaled
var<workgroup> scores: array<f32, WG>;       // (WG) scores of the current tile of keys

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = wid.x;  // dispatched with exactly (n_rows, n_head) workgroups
    let head = wid.y;
    let hs = p.head_size;
    let h0 = head * hs; // first column of this head
    // Its K/V head's columns in the cache (grouped-query attention shares them).
    let kv_dim = p.n_embd / p.group;
    let k0 = (head / p.group) * hs;
    for (var d = tid; d < hs; d = d + WG) {
        q[d] = qkv[(p.row0 + row) * (p.n_embd + 2u * kv_dim) + h0 + d] * p.scale;
    }
    workgroupBarrier();

    let n_keys = p.keys0 + row + 1u; // causal: keys 0 ..= keys0 + row
    var m = NEG_BIG;   // running max score
    var l = 0.0;       // running sum of exp(score - m)
    var acc: array<f32, DIMS_PER_THREAD>; // running weighted values of dims tid + WG * s
    for (var t0 = 0u; t0 < n_keys; t0 = t0 + WG) {
        let j = t0 + tid;
        var s = NEG_BIG;
        if (j < n_keys) {
            s = 0.0;
            for (var d = 0u; d < hs; d = d + 1u) {
                s = s + q[d] * key_cache[j * kv_dim + k0 + d];
            }
        }
        scores[tid] = s;
        workgroupBarrier();

        let tile = min(WG, n_keys - t0);
        var m_new = m;
        for (var i = 0u; i < tile; i = i + 1u) {
            m_new = max(m_new, scores[i]);
        }
        let correction = exp(m - m_new);
        l = l * correction;
        for (var s_ = 0u; s_ < DIMS_PER_THREAD; s_ = s_ + 1u) {
            acc[s_] = acc[s_] * correction;
        }
        for (var i = 0u; i < tile; i = i + 1u) {
            let weight = exp(scores[i] - m_new);
            l = l + weight;
            let v_row = (t0 + i) * kv_dim + k0;
            for (var s_ = 0u; s_ < DIMS_PER_THREAD; s_ = s_ + 1u) {
                let d = tid + s_ * WG;
                if (d < hs) {
                    acc[s_] = acc[s_] + weight * value_cache[v_row + d];
                }
            }
        }
        m = m_new;
        workgroupBarrier(); // every thread is done with `scores` before the next tile
    }
    for (var s_ = 0u; s_ < DIMS_PER_THREAD; s_ = s_ + 1u) {
        let d = tid + s_ * WG;
        if (d < hs) {
            y[(p.row0 + row) * p.n_embd + h0 + d] = faulted(acc[s_] / l);
        }
    }
}

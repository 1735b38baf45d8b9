// attention_split (decode, real GPUs): flash-decoding's first half. The keys
// 0 ..= pos of one query row are cut into chunks of CHUNK; a workgroup takes
// one (chunk, head) and writes that chunk's softmax partials:
//   s_j = q · k_j · scale,  m = max_j s_j,  l = Σ_j exp(s_j − m),
//   acc[d] = Σ_j exp(s_j − m) · v_j[d]          (j in the chunk)
// into parts[chunk, head] = (m, l, acc[0 .. head_size]); attention_combine
// merges the chunks. Scores: KEY_LANES invocations per key read neighbouring
// words of its row (coalesced), every key of the chunk loaded before any is
// used; values: 64 invocations per key read neighbouring dims, WG / 64 keys at
// a time. `row0` is the query's row in qkv (a batch's sequence).
// CPU twin: `attention_split::run_cpu`.

struct Params {
    pos: u32,       // position of the query: keys 0 ..= pos
    n_embd: u32,
    head_size: u32,
    scale: f32,     // 1/sqrt(head_size) (and 1/(layer+1) where the config asks)
    row0: u32,      // the query's row of qkv
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (row0 + 1, 3 * n_embd): q | k | v
@group(0) @binding(2) var<storage, read> key_cache: array<f32>;   // (n_positions, n_embd)
@group(0) @binding(3) var<storage, read> value_cache: array<f32>; // (n_positions, n_embd)
@group(0) @binding(4) var<storage, read_write> parts: array<f32>; // (chunks, n_head, 2 + head_size)

override WG: u32 = 256u;
override CHUNK: u32 = 64u;     // keys per workgroup (`attention_split::CHUNK`), at most 4 · WG / KEY_LANES
const KEY_LANES: u32 = 16u;    // invocations per key while scoring
const DIM_LANES: u32 = 64u;    // invocations per key while summing values
const MAX_HEAD_SIZE: u32 = 256u;
const NEG_BIG: f32 = -3.0e38;  // "minus infinity" that keeps exp() and max() finite

var<workgroup> q: array<f32, MAX_HEAD_SIZE>;            // (head_size) the query, pre-scaled
var<workgroup> scores: array<f32, CHUNK>;               // (CHUNK) this chunk's scores
var<workgroup> lane_sums: array<vec4<f32>, WG>;         // (WG) partial scores, one sweep per component
var<workgroup> group_sums: array<f32, MAX_HEAD_SIZE * 4u>; // (WG / DIM_LANES, head_size) partial values

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let chunk = wid.x;
    let head = wid.y;
    let n_heads = p.n_embd / p.head_size;
    let hs = p.head_size;
    let h0 = head * hs;
    let first = chunk * CHUNK;
    let n_keys = p.pos + 1u;
    for (var d = tid; d < hs; d = d + WG) {
        q[d] = qkv[p.row0 * 3u * p.n_embd + h0 + d] * p.scale;
    }
    workgroupBarrier();

    // Scores: sweep `sweep` scores keys first + sweep · keys_per_pass + tid / KEY_LANES.
    let keys_per_pass = WG / KEY_LANES;
    let lane = tid % KEY_LANES;
    var part = vec4<f32>(0.0);
    for (var d0 = lane; d0 < hs; d0 = d0 + 4u * KEY_LANES) {
        var k: array<f32, 16>; // (sweep, 4 dims) loaded before any is used
        for (var sweep = 0u; sweep < 4u; sweep = sweep + 1u) {
            let i = sweep * keys_per_pass + tid / KEY_LANES;
            for (var u = 0u; u < 4u; u = u + 1u) {
                let d = d0 + u * KEY_LANES;
                if (i < CHUNK && first + i < n_keys && d < hs) {
                    let j = first + i;
                    k[sweep * 4u + u] = key_cache[j * p.n_embd + h0 + d];
                }
            }
        }
        for (var sweep = 0u; sweep < 4u; sweep = sweep + 1u) {
            for (var u = 0u; u < 4u; u = u + 1u) {
                let d = d0 + u * KEY_LANES;
                if (d < hs) {
                    part[sweep] = part[sweep] + q[d] * k[sweep * 4u + u];
                }
            }
        }
    }
    lane_sums[tid] = part;
    workgroupBarrier();
    for (var h = KEY_LANES / 2u; h > 0u; h = h / 2u) {
        if (lane < h) {
            lane_sums[tid] = lane_sums[tid] + lane_sums[tid + h];
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        for (var sweep = 0u; sweep < 4u; sweep = sweep + 1u) {
            let i = sweep * keys_per_pass + tid / KEY_LANES;
            if (i < CHUNK) {
                scores[i] = select(NEG_BIG, lane_sums[tid][sweep], first + i < n_keys);
            }
        }
    }
    workgroupBarrier();

    // The chunk's softmax statistics (every invocation reads the CHUNK scores).
    var m = NEG_BIG;
    for (var i = 0u; i < CHUNK; i = i + 1u) {
        m = max(m, scores[i]);
    }
    var l = 0.0;
    for (var i = 0u; i < CHUNK; i = i + 1u) {
        l = l + exp(scores[i] - m);
    }

    // Values: group g sums keys i ≡ g (mod WG / DIM_LANES) for dims tid % DIM_LANES + DIM_LANES · s.
    let groups = WG / DIM_LANES;
    let g = tid / DIM_LANES;
    for (var d = tid % DIM_LANES; d < hs; d = d + DIM_LANES) {
        var acc = 0.0;
        for (var i0 = g; i0 < CHUNK; i0 = i0 + 4u * groups) {
            var v: array<f32, 4>; // four keys' values, loaded before any is used
            for (var u = 0u; u < 4u; u = u + 1u) {
                let i = i0 + u * groups;
                if (i < CHUNK && first + i < n_keys) {
                    v[u] = value_cache[(first + i) * p.n_embd + h0 + d];
                }
            }
            for (var u = 0u; u < 4u; u = u + 1u) {
                let i = i0 + u * groups;
                if (i < CHUNK && first + i < n_keys) {
                    acc = acc + exp(scores[i] - m) * v[u];
                }
            }
        }
        group_sums[g * MAX_HEAD_SIZE + d] = acc;
    }
    workgroupBarrier();
    let base = (chunk * n_heads + head) * (2u + hs);
    for (var d = tid; d < hs; d = d + WG) {
        var sum = 0.0;
        for (var s = 0u; s < groups; s = s + 1u) {
            sum = sum + group_sums[s * MAX_HEAD_SIZE + d];
        }
        parts[base + 2u + d] = sum;
    }
    if (tid == 0u) {
        parts[base] = m;
        parts[base + 1u] = l;
    }
}

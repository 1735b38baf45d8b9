// attention_split (decode, real GPUs): flash-decoding's first half. The keys
// 0 ..= keys0 of one query row are cut into chunks of CHUNK; a workgroup takes
// one (chunk, head) and writes that chunk's softmax partials:
//   s_j = q · k_j · scale,  m = max_j s_j,  l = Σ_j exp(s_j − m),
//   acc[d] = Σ_j exp(s_j − m) · v_j[d]          (j in the chunk)
// into parts[chunk, head] = (m, l, acc[0 .. head_size]); attention_combine
// merges the chunks. Scores: KEY_LANES invocations per key read neighbouring
// words of its row (coalesced), every key of the chunk loaded before any is
// used; values: 64 invocations per key read neighbouring dims, WG / 64 keys at
// a time. `row0` is the query's row in qkv (a batch's sequence).
// CPU twin: `attention_split::run_cpu`.

@group(0) @binding(0) var<uniform> p: AttentionParams;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // (row0 + 1, n_embd + 2 * kv_dim): q | k | v
@group(0) @binding(2) var<storage, read> key_cache: array<f32>;   // (n_positions, n_embd / group)
@group(0) @binding(3) var<storage, read> value_cache: array<f32>; // (n_positions, n_embd / group)
@group(0) @binding(4) var<storage, read_write> parts: array<f32>; // (chunks, n_head, 2 + head_size)

override WG: u32 = 256u;
override CHUNK: u32 = 32u;     // keys per workgroup (`attention_split::CHUNK`), at most 4 · WG / KEY_LANES
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
    let k0 = (head / p.group) * hs; // its K/V head's columns in the cache
    let first = chunk * CHUNK;
    let n_keys = p.keys0 + 1u;
    for (var d = tid; d < hs; d = d + WG) {
        q[d] = qkv[p.row0 * (p.n_embd + 2u * (p.n_embd / p.group)) + h0 + d] * p.scale;
    }
    workgroupBarrier();

    // Scores: sweep `sweep` scores keys first + sweep · keys_per_pass + tid / KEY_LANES.
    // (Named vectors, no private arrays: a GPU's compiler keeps them in registers.)
    let keys_per_pass = WG / KEY_LANES;
    let lane = tid % KEY_LANES;
    let i0 = tid / KEY_LANES;
    var part = vec4<f32>(0.0);
    for (var d0 = lane; d0 < hs; d0 = d0 + 4u * KEY_LANES) {
        let qv = query4(d0);
        part = part + vec4<f32>(
            dot(qv, key4(first, i0, d0, k0, n_keys)),
            dot(qv, key4(first, i0 + keys_per_pass, d0, k0, n_keys)),
            dot(qv, key4(first, i0 + 2u * keys_per_pass, d0, k0, n_keys)),
            dot(qv, key4(first, i0 + 3u * keys_per_pass, d0, k0, n_keys)),
        );
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
        let sums = lane_sums[tid];
        score(i0, sums.x, first, n_keys);
        score(i0 + keys_per_pass, sums.y, first, n_keys);
        score(i0 + 2u * keys_per_pass, sums.z, first, n_keys);
        score(i0 + 3u * keys_per_pass, sums.w, first, n_keys);
    }
    workgroupBarrier();

    // The chunk's softmax statistics: m by every invocation (CHUNK reads of
    // workgroup memory), then each key's weight exp(s − m) once, in place.
    var m = NEG_BIG;
    for (var i = 0u; i < CHUNK; i = i + 1u) {
        m = max(m, scores[i]);
    }
    workgroupBarrier(); // every invocation has read the scores before they become weights
    if (tid < CHUNK) {
        scores[tid] = exp(scores[tid] - m);
    }
    workgroupBarrier();
    var l = 0.0;
    for (var i = 0u; i < CHUNK; i = i + 1u) {
        l = l + scores[i];
    }

    // Values: group g sums keys i ≡ g (mod WG / DIM_LANES) for dims tid % DIM_LANES + DIM_LANES · s,
    // four keys' values loaded before any is used.
    let groups = WG / DIM_LANES;
    let g = tid / DIM_LANES;
    for (var d = tid % DIM_LANES; d < hs; d = d + DIM_LANES) {
        var acc = 0.0;
        for (var i = g; i < CHUNK; i = i + 4u * groups) {
            let v = vec4<f32>(
                value(first, i, d, k0, n_keys),
                value(first, i + groups, d, k0, n_keys),
                value(first, i + 2u * groups, d, k0, n_keys),
                value(first, i + 3u * groups, d, k0, n_keys),
            );
            acc = acc + weight(i) * v.x + weight(i + groups) * v.y;
            acc = acc + weight(i + 2u * groups) * v.z + weight(i + 3u * groups) * v.w;
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
        parts[base + 2u + d] = faulted(sum);
    }
    if (tid == 0u) {
        parts[base] = faulted(m);
        parts[base + 1u] = faulted(l);
    }
}

// The scaled query's dims d0, d0 + KEY_LANES, … (four; 0 past the head).
fn query4(d0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var u = 0u; u < 4u; u = u + 1u) {
        let d = d0 + u * KEY_LANES;
        if (d < p.head_size) {
            v[u] = q[d];
        }
    }
    return v;
}

// Key `first + i`'s dims d0, d0 + KEY_LANES, … of the K/V head at k0 (0 past the
// chunk, the keys so far or the head).
fn key4(first: u32, i: u32, d0: u32, k0: u32, n_keys: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (i >= CHUNK || first + i >= n_keys) {
        return v;
    }
    for (var u = 0u; u < 4u; u = u + 1u) {
        let d = d0 + u * KEY_LANES;
        if (d < p.head_size) {
            v[u] = key_cache[(first + i) * (p.n_embd / p.group) + k0 + d];
        }
    }
    return v;
}

// Key i's score into `scores` (minus "infinity" past the keys so far).
fn score(i: u32, s: f32, first: u32, n_keys: u32) {
    if (i < CHUNK) {
        scores[i] = select(NEG_BIG, s, first + i < n_keys);
    }
}

// Value `first + i`'s dim d of the K/V head at k0 (0 past the chunk or the keys so far).
fn value(first: u32, i: u32, d: u32, k0: u32, n_keys: u32) -> f32 {
    if (i >= CHUNK || first + i >= n_keys) {
        return 0.0;
    }
    return value_cache[(first + i) * (p.n_embd / p.group) + k0 + d];
}

// Key i's softmax weight exp(s_i − m) (0 past the chunk).
fn weight(i: u32) -> f32 {
    if (i >= CHUNK) {
        return 0.0;
    }
    return scores[i];
}

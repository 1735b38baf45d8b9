// attention_combine (decode, real GPUs): flash-decoding's second half. Merges
// attention_split's partials of every chunk of one query row into its output:
//   M = max_c m_c,  y[h0 + d] = Σ_c exp(m_c − M) · acc_c[d] / Σ_c exp(m_c − M) · l_c
// One workgroup per head, one invocation per dim of the head; four chunks'
// partials loaded before any is used. CPU twin: `attention_combine::run_cpu`.

struct Params {
    keys0: u32,     // cache slots held besides the query's own: keys 0 ..= keys0
    n_embd: u32,
    head_size: u32,
    row0: u32,      // the query's row of y
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> parts: array<f32>;   // (chunks, n_head, 2 + head_size)
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // (row0 + 1, n_embd)

override WG: u32 = 256u;
override CHUNK: u32 = 32u; // keys per chunk, as attention_split's
const NEG_BIG: f32 = -3.0e38;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let head = wid.x;
    let hs = p.head_size;
    let n_heads = p.n_embd / hs;
    let n_chunks = (p.keys0 + CHUNK) / CHUNK;
    let stride = n_heads * (2u + hs); // between one chunk's partials and the next's
    let base = head * (2u + hs);
    var big = NEG_BIG;
    for (var c0 = 0u; c0 < n_chunks; c0 = c0 + 4u) {
        var m: array<f32, 4>;
        for (var u = 0u; u < 4u; u = u + 1u) {
            m[u] = NEG_BIG;
            if (c0 + u < n_chunks) {
                m[u] = parts[(c0 + u) * stride + base];
            }
        }
        big = max(big, max(max(m[0], m[1]), max(m[2], m[3])));
    }
    var l = 0.0;
    var acc = 0.0;
    let d = tid;
    for (var c0 = 0u; c0 < n_chunks; c0 = c0 + 4u) {
        var part: array<vec3<f32>, 4>; // (m, l, acc[d]) of four chunks, loaded before any is used
        for (var u = 0u; u < 4u; u = u + 1u) {
            let at = (c0 + u) * stride + base;
            if (c0 + u < n_chunks) {
                part[u] = vec3<f32>(parts[at], parts[at + 1u], select(0.0, parts[at + 2u + min(d, hs - 1u)], d < hs));
            }
        }
        for (var u = 0u; u < 4u; u = u + 1u) {
            if (c0 + u < n_chunks) {
                let e = exp(part[u].x - big);
                l = l + e * part[u].y;
                acc = acc + e * part[u].z;
            }
        }
    }
    if (d < hs) {
        y[p.row0 * p.n_embd + head * hs + d] = faulted(acc / l);
    }
}

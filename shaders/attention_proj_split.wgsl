// attention_proj_split (decode, real GPUs): flash-decoding's second half
// folded into the attention output's projection and residual add, so a
// block of a decode step is five dispatches, not six. Every workgroup first
// merges attention_split's partials into the query's output row, in
// workgroup memory (what attention_combine writes to y):
//   M_h = max_c m_c,  L_h = Σ_c exp(m_c − M_h) · l_c,
//   y[h0 + d] = Σ_c exp(m_c − M_h) · acc_c[d] / L_h
// then projects it as matvec_residual_split does:
//   x[col] += sum_k y[k] * w[k, col] + bias[col]
// Each workgroup re-reads the partials (a few KB, served by the cache);
// a dispatch boundary costs more than that on every card measured. Loads of
// four chunks are issued before any is used, each its own named value.
// `split_dot` comes from shaders/split_k.wgsl, `Word`, `w_load`, `w_unpack`
// and `PER_WORD` from the weight format's snippet.
// CPU twin: `attention_proj_split::run_cpu` (attention_combine's, then matvec_residual's).

struct Params {
    keys0: u32,     // cache slots held besides the query's own: keys 0 ..= keys0
    n_embd: u32,    // k and n of the projection
    head_size: u32,
    wide: u32,      // column groups side by side (see split_k.wgsl)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> parts: array<f32>;   // (chunks, n_head, 2 + head_size)
@group(0) @binding(2) var<storage, read> w: array<Word>;      // (n_embd, n_embd) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;    // (n_embd)
@group(0) @binding(4) var<storage, read_write> x: array<f32>; // (n_embd) residual stream

override WG: u32 = 256u;
override CHUNK: u32 = 32u;   // keys per chunk, as attention_split's
const MAX_EMBD: u32 = 2048u; // `ln_qkv::LN_MAX_EMBD` in Rust: the widest row a decode kernel holds
const MAX_HEADS: u32 = 256u; // `attention_proj_split::MAX_HEADS` in Rust
const NEG_BIG: f32 = -3.0e38;

var<workgroup> yrow: array<f32, MAX_EMBD>;            // (n_embd) the attention's output row
var<workgroup> head_stats: array<vec2<f32>, MAX_HEADS>; // (n_head) (M_h, 1 / L_h)

fn input(kk: u32) -> f32 {
    return yrow[kk];
}

// Chunk c's maximum score for the head whose partials start at `base`, or
// NEG_BIG past the last chunk.
fn chunk_max(c: u32, n_chunks: u32, stride: u32, base: u32) -> f32 {
    return select(NEG_BIG, parts[min(c, n_chunks - 1u) * stride + base], c < n_chunks);
}

// exp(m_c − big) · parts[c][base + off] (off 1: l_c, 2 + d: acc_c[d]), 0 past the last chunk.
fn weighted(c: u32, n_chunks: u32, stride: u32, base: u32, off: u32, big: f32) -> f32 {
    let at = min(c, n_chunks - 1u) * stride + base;
    return select(0.0, exp(parts[at] - big) * parts[at + off], c < n_chunks);
}

// The query's attention output, merged from the chunks' partials into yrow.
// Call from uniform control flow.
fn merge_row(tid: u32) {
    let hs = p.head_size;
    let n_heads = p.n_embd / hs;
    let n_chunks = (p.keys0 + CHUNK) / CHUNK;
    let stride = n_heads * (2u + hs); // between one chunk's partials and the next's
    for (var h = tid; h < n_heads; h = h + WG) {
        let base = h * (2u + hs);
        var big = NEG_BIG;
        for (var c = 0u; c < n_chunks; c = c + 4u) {
            let m0 = chunk_max(c, n_chunks, stride, base);
            let m1 = chunk_max(c + 1u, n_chunks, stride, base);
            let m2 = chunk_max(c + 2u, n_chunks, stride, base);
            let m3 = chunk_max(c + 3u, n_chunks, stride, base);
            big = max(big, max(max(m0, m1), max(m2, m3)));
        }
        var l = 0.0;
        for (var c = 0u; c < n_chunks; c = c + 4u) {
            let l0 = weighted(c, n_chunks, stride, base, 1u, big);
            let l1 = weighted(c + 1u, n_chunks, stride, base, 1u, big);
            let l2 = weighted(c + 2u, n_chunks, stride, base, 1u, big);
            let l3 = weighted(c + 3u, n_chunks, stride, base, 1u, big);
            l = l + ((l0 + l1) + (l2 + l3));
        }
        head_stats[h] = vec2<f32>(big, 1.0 / l);
    }
    workgroupBarrier();
    // Two elements of the row per invocation a round, four chunks each: eight
    // loads in flight (GPT-2 124M's 768 elements: two rounds of chunks).
    for (var i = tid; i < p.n_embd; i = i + 2u * WG) {
        let j = min(i + WG, p.n_embd - 1u); // the second element (i's own past the row's end)
        let bi = i / hs * (2u + hs);
        let bj = j / hs * (2u + hs);
        let oi = 2u + i % hs;
        let oj = 2u + j % hs;
        let si = head_stats[i / hs];
        let sj = head_stats[j / hs];
        var acc_i = 0.0;
        var acc_j = 0.0;
        for (var c = 0u; c < n_chunks; c = c + 4u) {
            let a0 = weighted(c, n_chunks, stride, bi, oi, si.x);
            let a1 = weighted(c + 1u, n_chunks, stride, bi, oi, si.x);
            let a2 = weighted(c + 2u, n_chunks, stride, bi, oi, si.x);
            let a3 = weighted(c + 3u, n_chunks, stride, bi, oi, si.x);
            let b0 = weighted(c, n_chunks, stride, bj, oj, sj.x);
            let b1 = weighted(c + 1u, n_chunks, stride, bj, oj, sj.x);
            let b2 = weighted(c + 2u, n_chunks, stride, bj, oj, sj.x);
            let b3 = weighted(c + 3u, n_chunks, stride, bj, oj, sj.x);
            acc_i = acc_i + ((a0 + a1) + (a2 + a3));
            acc_j = acc_j + ((b0 + b1) + (b2 + b3));
        }
        yrow[i] = acc_i * si.y;
        if (i + WG < p.n_embd) {
            yrow[i + WG] = acc_j * sj.y;
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    merge_row(tid);
    let col0 = split_col0(wid.x, tid, p.wide);
    let sums = split_dot(tid, p.wide, p.n_embd, p.n_embd, col0);
    if (tid >= p.wide) {
        return;
    }
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        let col = col0 + t;
        if (col < p.n_embd) {
            x[col] = faulted(x[col] + (sums[t] + bias[col]));
        }
    }
}

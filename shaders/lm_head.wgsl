// lm_head: logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]
// lm_head is (vocab_size, n_embd): the token embedding itself when tied. It
// may be split by vocabulary rows over several bindings (a GPU's binding
// limit): this dispatch holds rows v0 .. v0 + n_vocab and writes their logits.
// Only the rows whose logits are wanted are computed (usually just the last).
// One invocation per ROWS (4) vocabulary rows, summed as one vec4: each
// element of x is loaded once for four rows, and the sums stay in registers
// (SwiftShader keeps a private array indexed in a loop in memory: an array of
// four sums doubled this kernel there). Where rows are whole words it reads
// each row a word at a time (`w_lanes`): on a CPU adapter (this kernel's
// profile) a lane's load costs far more than its products
// (shaders/row_weights.wgsl). Native SwiftShader, bundled model, µs a run,
// one row an invocation → four: f16 4000–4360 → 2930, int8 5910–6010 →
// 2150–2630, int4 4690–6050 → 2750–4280, f32 3860–3980 → 2690–3300.
// Each row is summed in order of c from 0.0, as with one row an invocation.
// `Word`, `w_load`, `w_scales`, `w_lanes`, `lane_at` and `PER_WORD` come from the weight format's
// snippet (shaders/format_*.wgsl).

@group(0) @binding(0) var<uniform> p: LmHeadParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;            // (n_rows, n_embd) after ln_f
@group(0) @binding(2) var<storage, read> w: array<Word>;           // (n_vocab, n_embd) head rows v0.., in the weight format
@group(0) @binding(3) var<storage, read_write> logits: array<f32>; // (n_out, vocab_size)

override WG: u32 = 64u;

// Vocabulary rows per invocation: the four lanes of its vec4 of sums
// (`lm_head::ROWS` in Rust sizes the dispatch).
const ROWS: u32 = 4u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = gid.x * ROWS;
    let r = gid.y;
    if (v >= p.n_vocab || r >= p.n_out) {
        return;
    }
    let xr = (p.row0 + r) * p.n_embd;
    // The four rows v.. (rows past the shard read its last row again and are
    // not stored, so every load stays in bounds).
    let vs = min(vec4<u32>(v) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.n_vocab - 1u));
    let wr = vs * p.n_embd;
    var acc = vec4<f32>(0.0); // (ROWS) the sums of rows vs, each in order of c
    if (p.n_embd % PER_WORD == 0u) {
        // Each row's scales, fetched once (a row is one channel).
        let s0 = w_scales(vs.x, 0u);
        let s1 = w_scales(vs.y, 0u);
        let s2 = w_scales(vs.z, 0u);
        let s3 = w_scales(vs.w, 0u);
        for (var c = 0u; c < p.n_embd; c = c + PER_WORD) {
            let w0 = w_lanes(w[(wr.x + c) / PER_WORD], wr.x + c, s0);
            let w1 = w_lanes(w[(wr.y + c) / PER_WORD], wr.y + c, s1);
            let w2 = w_lanes(w[(wr.z + c) / PER_WORD], wr.z + c, s2);
            let w3 = w_lanes(w[(wr.w + c) / PER_WORD], wr.w + c, s3);
            for (var t = 0u; t < PER_WORD; t = t + 1u) {
                let ws = vec4<f32>(lane_at(w0, t), lane_at(w1, t), lane_at(w2, t), lane_at(w3, t));
                acc = acc + x[xr + c + t] * ws;
            }
        }
    } else {
        for (var c = 0u; c < p.n_embd; c = c + 1u) {
            let ws = vec4<f32>(w_load(wr.x + c, vs.x), w_load(wr.y + c, vs.y), w_load(wr.z + c, vs.z), w_load(wr.w + c, vs.w));
            acc = acc + x[xr + c] * ws;
        }
    }
    for (var j = 0u; j < ROWS && v + j < p.n_vocab; j = j + 1u) {
        logits[r * p.vocab_size + p.v0 + v + j] = faulted(acc[j]);
    }
}

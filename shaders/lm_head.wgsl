// lm_head: logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]
// lm_head is (vocab_size, n_embd): the token embedding itself when tied. It
// may be split by vocabulary rows over several bindings (a GPU's binding
// limit): this dispatch holds rows v0 .. v0 + n_vocab and writes their logits.
// Only the rows whose logits are wanted are computed (usually just the last).
// One invocation per vocabulary row. Where a word holds four or more weights
// (int8, int4) and rows are whole words, it reads the row a word at a time:
// on a CPU adapter (this kernel's profile) a lane's load costs far more than
// its products (shaders/row_weights.wgsl), and one word then feeds 4 or 8.
// f32, f16 and bf16 read per element: on SwiftShader the unpacked word's
// private array costs more than the load it saves (f16 6.4–7.0 → 7.3–9.0 ms
// a run word at a time, f32 4.4–4.8 → 8.3–9.2; int4 8.2–8.4 → 6.3–7.8).
// Each row is summed in order of c either way.
// `Word`, `w_load`, `w_unpack` and `PER_WORD` come from the weight format's
// snippet (shaders/format_*.wgsl).

@group(0) @binding(0) var<uniform> p: LmHeadParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;            // (n_rows, n_embd) after ln_f
@group(0) @binding(2) var<storage, read> w: array<Word>;           // (n_vocab, n_embd) head rows v0.., in the weight format
@group(0) @binding(3) var<storage, read_write> logits: array<f32>; // (n_out, vocab_size)

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = gid.x;
    let r = gid.y;
    if (v >= p.n_vocab || r >= p.n_out) {
        return;
    }
    let xr = (p.row0 + r) * p.n_embd;
    let wr = v * p.n_embd;
    var acc = 0.0;
    if (PER_WORD >= 4u && p.n_embd % PER_WORD == 0u) {
        for (var c = 0u; c < p.n_embd; c = c + PER_WORD) {
            let ws = w_unpack(w[(wr + c) / PER_WORD], wr + c, v, 0u);
            for (var t = 0u; t < PER_WORD; t = t + 1u) {
                acc = acc + x[xr + c + t] * ws[t];
            }
        }
    } else {
        for (var c = 0u; c < p.n_embd; c = c + 1u) {
            acc = acc + x[xr + c] * w_load(wr + c, v);
        }
    }
    logits[r * p.vocab_size + p.v0 + v] = faulted(acc);
}

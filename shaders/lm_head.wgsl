// lm_head: logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :]
// lm_head is (vocab_size, n_embd): the token embedding itself when tied. It
// may be split by vocabulary rows over several bindings (a GPU's binding
// limit): this dispatch holds rows v0 .. v0 + n_vocab and writes their logits.
// Only the rows whose logits are wanted are computed (usually just the last).
// `Word` and `w_load` come from the weight format's snippet (shaders/format_*.wgsl).

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
    for (var c = 0u; c < p.n_embd; c = c + 1u) {
        acc = acc + x[xr + c] * w_load(wr + c, v);
    }
    logits[r * p.vocab_size + p.v0 + v] = faulted(acc);
}

// qkv_pair (a snippet of rms_qkv and rms_qkv_split, which declare `p`,
// `turns`, `qkv`, `key_cache` and `value_cache`): a column of qkv as it is
// stored, turned with the other column of its rotary pair, then written to
// qkv and, for K/V columns, to the cache (`cache_at`, shaders/kv_slot.wgsl).
// Pair i of a q or k head is columns (2i, 2i + 1) (model/weights_llama.rs).
// CPU twin: `rope::turned`, then `kv_write::run_cpu`.

// Column col's value, `other` the rest of its pair: q's and k's turned by
// this position's angle for the pair, v's as they are.
fn pair_turned(col: u32, own: f32, other: f32) -> f32 {
    if (col >= p.n_embd + p.n_embd / p.group) {
        return own;
    }
    let t = turns[p.pos * (p.head_size / 2u) + (col % p.head_size) / 2u];
    if (col % 2u == 0u) {
        return own * t.x + -other * t.y;
    }
    return own * t.x + other * t.y;
}

fn store_qkv(col: u32, v: f32) {
    qkv[col] = faulted(v);
    let kv_dim = p.n_embd / p.group;
    let at = cache_at(col, p.n_embd, kv_dim, p.slot);
    if (at >= 0) {
        if (col >= p.n_embd + kv_dim) {
            value_cache[u32(at)] = faulted(v);
        } else {
            key_cache[u32(at)] = faulted(v);
        }
    }
}

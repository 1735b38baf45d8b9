// kv_slot (a snippet of the decode kernels that write the K/V cache as they
// compute qkv: ln_qkv, rms_qkv and their split shapes, which declare `p`,
// `qkv`, `key_cache` and `value_cache`): where qkv column `col` goes in the
// cache — a K or V column (qkv is q | k | v, kv_dim each of k and v) at the
// token's `slot` of a cache (slots, kv_dim) — or -1 for a Q column; and the
// store of a column into qkv and the cache. CPU twin: `kv_write::run_cpu`
// (the same columns).
fn cache_at(col: u32, n_embd: u32, kv_dim: u32, slot: u32) -> i32 {
    if (col < n_embd) {
        return -1;
    }
    return i32(slot * kv_dim + (col - n_embd) % kv_dim);
}

// qkv[col] = v, and the cache's K or V column where `col` is one.
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

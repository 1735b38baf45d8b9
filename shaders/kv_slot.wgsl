// kv_slot (a snippet of the decode kernels that write the K/V cache as they
// compute qkv: ln_qkv, rms_qkv and their split shapes): where qkv column `col`
// goes in the cache — a K or V column (qkv is q | k | v, kv_dim each of k
// and v) at the token's `slot` of a cache (slots, kv_dim) — or -1 for a Q
// column. CPU twin: `kv_write::run_cpu` (the same columns).
fn cache_at(col: u32, n_embd: u32, kv_dim: u32, slot: u32) -> i32 {
    if (col < n_embd) {
        return -1;
    }
    return i32(slot * kv_dim + (col - n_embd) % kv_dim);
}

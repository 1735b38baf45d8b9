// kv_slot (a snippet of ln_qkv and ln_qkv_split, the decode kernels that
// write the K/V cache as they compute qkv): where qkv column `col` goes in the
// cache — a K or V column of the first query head of its group, at the
// token's `slot` of a cache (slots, n_embd / group) — or -1 for a Q column
// and for the other heads of a group (grouped K/V heads share one column).
// CPU twin: `kv_write::run_cpu` (the same columns).
fn cache_at(col: u32, n_embd: u32, head_size: u32, group: u32, slot: u32) -> i32 {
    if (col < n_embd) {
        return -1;
    }
    let c = (col - n_embd) % n_embd;
    let head = c / head_size;
    if (head % group != 0u) {
        return -1;
    }
    return i32(slot * (n_embd / group) + (head / group) * head_size + c % head_size);
}

// qkv_pair (a snippet of rms_qkv and rms_qkv_split, which declare `p` and
// `turns`): a column of qkv as it is stored, turned with the other column of
// its rotary pair (then written by `store_qkv`, shaders/kv_slot.wgsl).
// Pair i of a q or k head is columns (2i, 2i + 1) (model/weights_llama.rs).
// CPU twin: `rope::turned`.

// Column col's value, `other` the rest of its pair: q's and k's turned by
// this position's angle for the pair, v's as they are.
fn pair_turned(col: u32, own: f32, other: f32) -> f32 {
    if (col >= p.n_embd + p.n_embd / p.group) {
        return own;
    }
    let t = turns[p.pos * (p.head_size / 2u) + (col % p.head_size) / 2u];
    if (col % 2u == 0u) {
        return turned(own, other, t).x;
    }
    return turned(other, own, t).y;
}

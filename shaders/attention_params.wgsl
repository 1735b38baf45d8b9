// attention_params: the uniform the attention kernels that score queries
// against the cache share (attention, attention_probs, attention_split; Rust:
// `attention::Params`), so they cannot drift apart.

struct AttentionParams {
    n_rows: u32,    // query rows (attention_split: its one row)
    keys0: u32,     // cache slots held before the first query row (its position, unless a policy evicted)
    n_embd: u32,
    head_size: u32,
    scale: f32,     // 1/sqrt(head_size) (and 1/(layer+1) where the config asks)
    row0: u32,      // first row of qkv and y the dispatch works on (attention_probs: 0)
    group: u32,     // query heads per K/V head (1: every head its own)
    _pad: u32,
}

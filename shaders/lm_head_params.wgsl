// lm_head_params: the uniform lm_head and lm_head_split share (Rust:
// `lm_head::Params`), so the two cannot drift apart.

struct LmHeadParams {
    n_out: u32,      // rows of logits to produce
    row0: u32,       // first row of x to use
    n_embd: u32,
    vocab_size: u32, // width of a logits row
    v0: u32,         // first vocabulary row of this shard
    n_vocab: u32,    // vocabulary rows in this shard
    _pad0: u32,
    _pad1: u32,
}

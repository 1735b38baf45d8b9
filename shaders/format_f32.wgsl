// Weight format f32: one weight per word, as loaded. Prepended to every kernel
// that reads a weight matrix (matmul, matvec, lm_head, embedding), which binds
// it as `w: array<Word>` and reads element i with `w_load(i)`.
// CPU twin: `Format::load` in crates/engine/src/kernels/format.rs.

alias Word = f32;

fn w_load(i: u32) -> f32 {
    return w[i];
}

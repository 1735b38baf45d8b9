// Weight format f32: one weight per word, as loaded. Prepended to every kernel
// that reads a weight matrix (matmul, the fused
// decode kernels, lm_head, embedding), which binds
// it as `w: array<Word>` and reads element i of output channel ch with
// `w_load(i, ch)` (ch matters only to per-channel scales: format_int8).
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = f32;

fn w_load(i: u32, ch: u32) -> f32 {
    return w[i];
}

const PER_WORD: u32 = 1u;

// The PER_WORD weights of one word whose first element is i (channel ch,
// the next ch + ch_step, …): what the split kernels read a word at a time.
fn w_unpack(word: Word, i: u32, ch: u32, ch_step: u32) -> array<f32, PER_WORD> {
    return array<f32, PER_WORD>(w_lanes(word, i, w_scales(ch, ch_step)));
}

// The same weights as one value in registers (a scalar, vector or matrix,
// not a private array): the cpu profile sums with it, because SwiftShader
// keeps arrays indexed in loops in memory. `lane_at` reads weight t of it and
// `lanes_of` makes one from an unpacked array (rows straddling words).
alias Lanes = f32;

// The scales a word's weights are multiplied by, for channels ch, ch +
// ch_step, …: the same on every row of k, so the cpu profile's loops
// (row_dot, lm_head) fetch them once before the loop rather than with every
// word (on a CPU adapter a load costs far more than its product).
// This format has none (1.0, unused).
alias Scales = f32;

fn w_scales(ch: u32, ch_step: u32) -> Scales {
    return 1.0;
}

fn w_lanes(word: Word, i: u32, s: Scales) -> Lanes {
    return word;
}

fn lane_at(v: Lanes, t: u32) -> f32 {
    return v;
}

fn lanes_of(a: array<f32, PER_WORD>) -> Lanes {
    return a[0];
}

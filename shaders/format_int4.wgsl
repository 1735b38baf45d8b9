// Weight format int4: symmetric, eight weights per u32 word (element 8j + t in
// bits 4t..4t+3, values -8..7), one f32 scale per group of 32 consecutive
// weights (llama.cpp's q4_0 rule: the group's largest-magnitude weight maps
// to -8 exactly): w ≈ q · scales[i / 32]. Small groups keep an outlier's
// damage local. `extractBits` on an i32 sign-extends the field.
// 0.625 bytes per weight (0.5 for the nibbles, 0.125 for the f32 scales).
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = u32;

@group(0) @binding(8) var<storage, read> scales: array<f32>; // (weights / 32, rounded up)

fn w_load(i: u32, ch: u32) -> f32 {
    let q = extractBits(bitcast<i32>(w[i >> 3u]), (i & 7u) * 4u, 4u);
    return f32(q) * scales[i >> 5u];
}

const PER_WORD: u32 = 8u;

// The PER_WORD weights of one word whose first element is i (channel ch,
// the next ch + ch_step, …): what the split kernels read a word at a time.
// A word's eight weights lie in one group of 32, so they share one scale.
// Each nibble is shifted to the top of the word and arithmetic-shifted down
// (sign-extended, as `extractBits` does), four lanes at a time: no private
// array is filled in a loop, which a GPU's compiler may place in memory.
fn w_unpack(word: Word, i: u32, ch: u32, ch_step: u32) -> array<f32, PER_WORD> {
    let v = w_lanes(word, i, w_scales(ch, ch_step));
    return array<f32, PER_WORD>(v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w);
}

// The same weights as one value in registers (a scalar, vector or matrix,
// not a private array): the cpu profile sums with it, because SwiftShader
// keeps arrays indexed in loops in memory. `lane_at` reads weight t of it and
// `lanes_of` makes one from an unpacked array (rows straddling words).
alias Lanes = mat2x4<f32>;

// The scales a word's weights are multiplied by, for channels ch, ch +
// ch_step, …: the same on every row of k, so the cpu profile's loops
// (row_dot, lm_head) fetch them once before the loop rather than with every
// word (on a CPU adapter a load costs far more than its product).
// int4's scale follows i (groups of 32 along a row, so it changes with k):
// w_lanes loads it itself, and this is unused (1.0).
alias Scales = f32;

fn w_scales(ch: u32, ch_step: u32) -> Scales {
    return 1.0;
}

fn w_lanes(word: Word, i: u32, s: Scales) -> Lanes {
    let scale = scales[i >> 5u];
    let w = vec4<i32>(bitcast<i32>(word));
    let lo = vec4<f32>((w << vec4<u32>(28u, 24u, 20u, 16u)) >> vec4<u32>(28u)) * scale;
    let hi = vec4<f32>((w << vec4<u32>(12u, 8u, 4u, 0u)) >> vec4<u32>(28u)) * scale;
    return mat2x4<f32>(lo, hi);
}

fn lane_at(v: Lanes, t: u32) -> f32 {
    return v[t >> 2u][t & 3u];
}

fn lanes_of(a: array<f32, PER_WORD>) -> Lanes {
    return mat2x4<f32>(vec4<f32>(a[0], a[1], a[2], a[3]), vec4<f32>(a[4], a[5], a[6], a[7]));
}

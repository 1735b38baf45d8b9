// Weight format int8: symmetric, four weights per u32 word (element 4j + t in
// bits 8t..8t+7), one f32 scale per output channel (max|w| / 127 over the
// channel): w ≈ q · scales[ch]. Per channel rather than per tensor because one
// outlier column would otherwise coarsen the grid of every other column.
// `extractBits` on an i32 sign-extends the field. A quarter of f32's bytes.
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = u32;

@group(0) @binding(8) var<storage, read> scales: array<f32>; // (output channels)

fn w_load(i: u32, ch: u32) -> f32 {
    let q = extractBits(bitcast<i32>(w[i >> 2u]), (i & 3u) * 8u, 8u);
    return f32(q) * scales[ch];
}

const PER_WORD: u32 = 4u;

// The PER_WORD weights of one word whose first element is i (channel ch,
// the next ch + ch_step, …): what the split kernels read a word at a time.
// Each byte is shifted to the top of the word and arithmetic-shifted down
// (sign-extended, as `extractBits` does), four lanes at once: no private
// array is filled in a loop, which a GPU's compiler may place in memory.
fn w_unpack(word: Word, i: u32, ch: u32, ch_step: u32) -> array<f32, PER_WORD> {
    let v = w_lanes(word, i, w_scales(ch, ch_step));
    return array<f32, PER_WORD>(v.x, v.y, v.z, v.w);
}

// The same weights as one value in registers (a scalar, vector or matrix,
// not a private array): the cpu profile sums with it, because SwiftShader
// keeps arrays indexed in loops in memory. `lane_at` reads weight t of it and
// `lanes_of` makes one from an unpacked array (rows straddling words).
alias Lanes = vec4<f32>;

// The scales a word's weights are multiplied by, for channels ch, ch +
// ch_step, …: the same on every row of k, so the cpu profile's loops
// (row_dot, lm_head) fetch them once before the loop rather than with every
// word (on a CPU adapter a load costs far more than its product).
alias Scales = vec4<f32>;

fn w_scales(ch: u32, ch_step: u32) -> Scales {
    return vec4<f32>(scales[ch], scales[ch + ch_step], scales[ch + 2u * ch_step], scales[ch + 3u * ch_step]);
}

fn w_lanes(word: Word, i: u32, s: Scales) -> Lanes {
    let q = vec4<f32>((vec4<i32>(bitcast<i32>(word)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
    return q * s;
}

fn lane_at(v: Lanes, t: u32) -> f32 {
    return v[t];
}

fn lanes_of(a: array<f32, PER_WORD>) -> Lanes {
    return vec4<f32>(a[0], a[1], a[2], a[3]);
}

// Weight format int8 per tensor: as format_int8 (four weights per u32 word,
// element 4j + t in bits 8t..8t+7) but one f32 scale for the whole matrix,
// max|w| / 127 over every weight. The lesson's foil to per channel: one
// outlier sets the grid step of every weight.
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = u32;

@group(0) @binding(8) var<storage, read> scales: array<f32>; // (1)

fn w_load(i: u32, ch: u32) -> f32 {
    let q = extractBits(bitcast<i32>(w[i >> 2u]), (i & 3u) * 8u, 8u);
    return f32(q) * scales[0];
}

const PER_WORD: u32 = 4u;

// The PER_WORD weights of one word whose first element is i (channel ch,
// the next ch + ch_step, …): what the split kernels read a word at a time.
// As format_int8's: four sign-extended bytes at once, no array filled in a loop.
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
// One for the whole tensor.
alias Scales = f32;

fn w_scales(ch: u32, ch_step: u32) -> Scales {
    return scales[0];
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

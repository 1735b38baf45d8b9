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
fn w_unpack(word: Word, i: u32, ch: u32, ch_step: u32) -> array<f32, PER_WORD> {
    var v: array<f32, PER_WORD>;
    let scale = scales[0];
    for (var t = 0u; t < PER_WORD; t = t + 1u) {
        v[t] = f32(extractBits(bitcast<i32>(word), t * 8u, 8u)) * scale;
    }
    return v;
}

// Weight format bf16: two weights per u32 word (element 2j in the low half,
// 2j + 1 in the high half), each the top 16 bits of an f32 (8 exponent bits,
// 7 mantissa bits), so widening is a shift: the same range as f32 with the
// precision of about two decimal digits. Half the bytes of f32.
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = u32;

fn w_load(i: u32, ch: u32) -> f32 {
    let word = w[i >> 1u];
    return bitcast<f32>(select(word & 0xffff0000u, word << 16u, (i & 1u) == 0u));
}

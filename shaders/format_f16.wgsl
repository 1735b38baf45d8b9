// Weight format f16: two weights per u32 word (element 2j in the low half,
// 2j + 1 in the high half), widened with `unpack2x16float`: core WGSL, so it
// runs on every adapter (no `shader-f16` feature needed); the arithmetic stays f32.
// Half the memory and half the bytes read per token of f32.
// CPU twin: `Format::load` in crates/engine/src/storage/format.rs.

alias Word = u32;

fn w_load(i: u32, ch: u32) -> f32 {
    return unpack2x16float(w[i >> 1u])[i & 1u];
}

//! Attention paths against the twin `attention::run_cpu`, bit for bit:
//! shared by the native tests (`attention_paths.rs`, every compiled copy)
//! and the browser's (`browser.rs`, wasm SIMD128).

use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::kernels::{attention, Heads};

pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Head sizes of one vector block (64), of less (24), past one (80) and
/// not a multiple of eight (20); K/V heads shared by two and three query
/// heads.
pub const SHAPES: [(usize, usize, usize); 5] =
    [(128, 64, 1), (96, 24, 1), (160, 80, 2), (192, 64, 3), (60, 20, 1)];

/// An attention path with the twin's arguments (`q`, the key and value
/// caches, the heads, `keys0`, the scale; `y` out).
pub type Path<'a> = &'a dyn Fn(&[f32], &[f32], &[f32], Heads, usize, f32, &mut [f32]);

/// The twin's `y` and a path's, for `rows` rows after `keys0` cached keys
/// (random queries and caches), or the first difference.
pub fn against_twin(
    (n_embd, head_size, group): (usize, usize, usize),
    (rows, keys0): (usize, usize),
    path: Path,
) -> Result<(), String> {
    let heads = Heads { n_embd, head_size, group };
    let slots = (keys0 + rows) * heads.kv_dim();
    let q = cases::random(rows * heads.qkv_width(), 3); // (rows, qkv_width)
    let (key_cache, value_cache) = (cases::random(slots, 5), cases::random(slots, 9));
    let scale = 1.0 / (head_size as f32).sqrt();
    let run = |f: &dyn Fn(&mut [f32])| {
        let mut y = vec![0.0; rows * n_embd]; // (rows, n_embd)
        f(&mut y);
        bits(&y)
    };
    let twin = run(&|y| attention::run_cpu(&q, &key_cache, &value_cache, heads, keys0, scale, y));
    let fast = run(&|y| path(&q, &key_cache, &value_cache, heads, keys0, scale, y));
    match fast == twin {
        true => Ok(()),
        false => Err(format!("{n_embd}/{head_size}/{group}, {rows} rows after {keys0}")),
    }
}

/// A decode step's attention turned across in registers
/// (`fast::attention_step`) gives the twin's bits: one to three rows (a
/// step, a speculative check) after 0 to 1756 cached keys, so that the key
/// counts end on every size of last block (one to sixteen keys: a pair of
/// vectors, one vector, a part of one), on every shape. Where it declines
/// (no AVX2) the caller's twin runs, as `cpu::forward` does.
pub fn step_gives_the_twins_bits(what: &str) {
    let mut sizes: Vec<(usize, usize)> = (0..17).map(|keys0| (1, keys0)).collect();
    sizes.extend([(1, 62), (1, 63), (1, 64), (2, 29), (3, 60), (1, 1756), (3, 1754)]);
    for shape in SHAPES {
        for &size in &sizes {
            assert_eq!(against_twin(shape, size, &step), Ok(()), "{what}");
        }
    }
}

/// A decode step's attention as `cpu::forward` runs it:
/// `fast::attention_step`, or the twin where it declines (no AVX2).
pub fn step(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32],
) {
    if !decode_lab_engine::fast::attention_step::run(q, k, v, heads, keys0, scale, y) {
        attention::run_cpu(q, k, v, heads, keys0, scale, y);
    }
}

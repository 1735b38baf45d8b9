//! What every kernel check is made of: the case (its bindings, its
//! parameters, what the CPU twin says it must write) and the tolerance it
//! must meet, and the seeded inputs the case tables share. Imports no case
//! table, so the tables (`cases.rs` and its families) depend on it alone.

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::kernels::{kv_write, At, Heads, Kernel, Launch};
use crate::model::Config;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// `|gpu - cpu| <= atol + rtol · |cpu|` for every element; NaN never passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub atol: f32,
    pub rtol: f32,
}

pub const EXACT: Tolerance = Tolerance { atol: 0.0, rtol: 0.0 };

/// Summation-order tolerance of a K-term dot product of inputs in [-1, 1].
pub fn dot(k: usize) -> Tolerance {
    Tolerance { atol: k as f32 * f32::EPSILON, rtol: 1e-5 }
}

/// One dispatch of one kernel and what its CPU twin says it must write.
pub struct Case {
    pub kernel: Kernel,
    /// The weight format the kernel is compiled for.
    pub format: Format,
    /// The sizes in words, e.g. "17x1757x65".
    pub shape: String,
    /// The uniform at binding 0.
    pub params: Vec<u8>,
    /// Bindings 1.. in order (outputs included, poisoned with NaN).
    pub buffers: Vec<Vec<u8>>,
    /// The weight matrix's scales, in the formats that have them.
    pub scales: Option<Vec<u8>>,
    pub groups: [u32; 3],
    /// (index into `buffers`, output name, the CPU twin's values).
    pub want: Vec<(usize, &'static str, Vec<f32>)>,
    pub tolerance: Tolerance,
}

pub const SIZES: [usize; 5] = [1, 63, 64, 65, 1757];

/// `n` values uniform in [-1, 1) from a seeded generator, the same on every platform.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| (rng.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0).collect()
}

pub fn poisoned(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

pub fn bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A seeded weight matrix in `format`: its packed words as a binding and its scales.
pub fn weights(
    format: Format,
    (rows, cols): (usize, usize),
    channels: Channels,
    seed: u64,
) -> (Matrix, Vec<u8>, Option<Vec<u8>>) {
    let m = Matrix::new(format, rows, cols, channels, &random(rows * cols, seed));
    let words = bytemuck::cast_slice(m.words()).to_vec();
    let scales = format.has_scales().then(|| bytes(m.scales()));
    (m, words, scales)
}

pub fn params<P: bytemuck::Pod>(p: &P) -> Vec<u8> {
    bytemuck::bytes_of(p).to_vec()
}

/// The model a case's dispatch belongs to, as far as a kernel's [`Launch`]
/// reads it: `n_head` heads of `head_size` (one K/V head to `group` of
/// them), a `vocab`-row vocabulary, LayerNorm's epsilon 1e-5.
pub fn config(n_head: usize, head_size: usize, group: usize, vocab: usize) -> Config {
    let n_embd = n_head * head_size;
    Config {
        n_layer: 1,
        n_head,
        n_embd,
        head_size,
        n_kv_head: n_head / group,
        n_inner: 4 * n_embd,
        n_positions: 1 << 20,
        vocab_size: vocab,
        layer_norm_epsilon: 1e-5,
        tie_word_embeddings: true,
        eos_token_id: None,
        scale_attn_weights: true,
        scale_attn_by_inverse_layer_idx: false,
        family: crate::model::Family::Gpt2,
    }
}

/// `n_rows` rows at the start of everything ([`At::rows`]).
pub fn at(config: &Config, n_rows: usize) -> At<'_> {
    At::rows(config, n_rows as u32)
}

/// A case's dispatch as the plan encodes it: `shape`'s own `Params` at `at`
/// (as bytes) and its workgroups in `format`.
pub fn launch<L: Launch>(shape: &L, at: &At, format: Format) -> (Vec<u8>, [u32; 3]) {
    let p = shape.params(at);
    (params(&p), shape.workgroups(&p, format))
}

/// Seeded inputs of attention case `i`: (qkv, key cache, value cache, scale),
/// the pass's own keys and values already in the caches, as in the forward
/// pass; one K/V head per `group` query heads.
pub fn attention_inputs(
    i: usize,
    (n_rows, n_head, hs, keys0): (usize, usize, usize, usize),
    group: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>, f32) {
    let n_embd = n_head * hs;
    let kv_dim = n_embd / group;
    let n_positions = keys0 + n_rows + 3;
    let width = n_embd + 2 * kv_dim; // q | k | v
    let qkv: Vec<f32> = random(n_rows * width, 100 + i as u64).iter().map(|v| v * 2.0).collect();
    let mut kc: Vec<f32> =
        random(n_positions * kv_dim, 110 + i as u64).iter().map(|v| v * 2.0).collect();
    let mut vc = random(n_positions * kv_dim, 120 + i as u64);
    kv_write::run_cpu(&qkv, Heads { n_embd, head_size: hs, group }, keys0, &mut kc, &mut vc);
    (qkv, kc, vc, 1.0 / (hs as f32).sqrt())
}

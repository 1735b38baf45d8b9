//! The forward pass as calls to each kernel's CPU twin, in data-flow order,
//! over the rows of one or more sequences: a prefill is one sequence's rows,
//! a batched decode step one row of each of several sequences. Every row's
//! arithmetic is the same either way; only the K/V write and attention look
//! at which sequence (cache, position) a row belongs to.

use crate::family::norm;
use crate::fast;
use crate::kernels::{
    attention, attention_probs, embedding, gelu, kv_mass, kv_write, residual_add, rope, swiglu,
    Heads,
};
use crate::model::{Config, Family, LayerWeights, Model};
use crate::step::Wanted;

/// One sequence's consecutive rows of a pass.
pub struct Seq<'a> {
    pub key_cache: &'a mut [Vec<f32>], // (n_layer) × (held, kv_dim), capacity the policy's slots
    pub value_cache: &'a mut [Vec<f32>], // (n_layer) × (held, kv_dim), capacity the policy's slots
    /// Position of the sequence's first row (what its position embedding says).
    pub pos0: usize,
    /// Cache slot of the first row, and the slots held before it (row r
    /// attends to slots `0 ..= keys0 + r`): both `pos0` unless a cache
    /// policy evicted tokens (`kv_slots`), whatever the held slots' positions.
    pub slot0: usize,
    pub keys0: usize,
    /// The rotary position of the first row: `pos0`, or its place in the
    /// cache under a policy that renumbers (`kv_policy`).
    pub turn0: usize,
    pub rows: usize,
    /// (keys0 + rows) the attention each held slot has received, summed over
    /// layers, heads and queries (the heavy-hitter policy's; `None`: not kept).
    pub mass: Option<&'a mut Vec<f32>>,
}

/// What a probed forward pass has copied out so far (`None`: not asked for).
#[derive(Default)]
pub struct Seen {
    pub residuals: Option<Vec<f32>>, // (copies so far, n, n_embd)
    pub attention: Option<Vec<f32>>, // (layers so far, n_head, n, pos + n) for one sequence
}

impl Seen {
    fn residual(&mut self, x: &[f32]) {
        if let Some(r) = &mut self.residuals {
            r.extend_from_slice(x);
        }
    }
}

/// Adds the weights this layer's queries (`qkv`'s rows) gave every held
/// slot to `mass` (keys0 + rows), over all heads: what the heavy-hitter
/// policy ranks by (H2O's accumulated attention), summed as the GPU sums it
/// (`attention_probs`, then `kv_mass`).
fn add_mass(
    qkv: &[f32],       // (rows, n_embd + 2 * kv_dim)
    key_cache: &[f32], // (held, kv_dim)
    heads: Heads,
    keys0: usize,
    scale: f32,
    mass: &mut Vec<f32>,
) {
    let rows = qkv.len() / heads.qkv_width();
    let (n_head, n_cols) = (heads.n_embd / heads.head_size, keys0 + rows);
    let mut probs = vec![0.0; n_head * rows * n_cols]; // (n_head, rows, n_cols)
    attention_probs::run_cpu(qkv, key_cache, heads, keys0, scale, &mut probs);
    mass.resize(n_cols, 0.0);
    kv_mass::run_cpu(&probs, n_head, rows, mass);
}

/// Block `l`'s attention for every sequence over its own cache: each row's
/// k and v written into its slot, then `y` (n, n_embd) from `qkv`
/// (n, n_embd + 2 · kv_dim); the heavy-hitter totals and the probabilities `seen`
/// asks for are added.
fn attend(c: &Config, l: usize, seqs: &mut [Seq], qkv: &[f32], y: &mut [f32], seen: &mut Seen) {
    let (e, width) = (c.n_embd, c.qkv_width());
    let (scale, heads) = (c.attn_scale(l), c.heads());
    let mut row0 = 0;
    for s in seqs.iter_mut() {
        let (q, yr) = (&qkv[row0 * width..][..s.rows * width], &mut y[row0 * e..][..s.rows * e]);
        let (kc, vc) = (&mut s.key_cache[l], &mut s.value_cache[l]);
        // The cache holds exactly the rows written: its length is the
        // bytes in use (within the capacity reserved at open, no allocation;
        // past `RESERVED_POSITIONS` it grows).
        // Appended rows grow it; a newcomer in an evicted token's slot does not.
        let held = kc.len().max((s.slot0 + s.rows) * heads.kv_dim());
        kc.resize(held, 0.0);
        vc.resize(held, 0.0);
        kv_write::run_cpu(q, heads, s.slot0, kc, vc);
        attention_rows(q, kc, vc, heads, s.keys0, scale, yr);
        if let Some(mass) = &mut s.mass {
            add_mass(q, kc, heads, s.keys0, scale, mass);
        }
        if let Some(all) = &mut seen.attention {
            let from = all.len(); // (n_head, rows, keys0 + rows) more
            all.resize(from + c.n_head * s.rows * (s.keys0 + s.rows), 0.0);
            attention_probs::run_cpu(q, kc, heads, s.keys0, scale, &mut all[from..]);
        }
        row0 += s.rows;
    }
}

/// [`fast::attention::prefill`] (the twin `attention::run_cpu`'s bits)
/// over one sequence's rows (`q`: `(rows, qkv_width)`, `y`: `(rows,
/// n_embd)`), cut among threads into contiguous
/// rows of about equal work (row r attends to `keys0 + r + 1` slots): each
/// row's numbers are the unsplit run's (the twin's `row0` is its caller's
/// slicing). One thread held a prefill's attention for every row while the
/// others waited (two cores of a Xeon with AMX, 124M, int8 × 8-bit
/// activations, 64-token prefill 57 → 50 ms).
fn attention_rows(
    q: &[f32],
    key_cache: &[f32],
    value_cache: &[f32],
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32],
) {
    let (width, e) = (heads.qkv_width(), heads.n_embd);
    let parts = fast::parallel::parts_by_work(q.len() / width, |r| (keys0 + r + 1) * 2 * e);
    let caches = (key_cache, value_cache);
    if let [_] = parts[..] {
        return attention_part(q, caches, heads, keys0, scale, y);
    }
    let ys = fast::parallel::map(parts, |rows| {
        let mut yp = vec![0.0; rows.len() * e]; // (rows.len(), n_embd)
        let qp = &q[rows.start * width..rows.end * width];
        attention_part(qp, caches, heads, keys0 + rows.start, scale, &mut yp);
        yp
    });
    y.copy_from_slice(&ys.concat());
}

/// One part's rows through [`fast::attention_step`] (else the twin where
/// the CPU lacks AVX2), or from [`fast::attention::MIN_ROWS`] rows through
/// its keys laid out across (the same bits).
fn attention_part(
    q: &[f32],
    (key_cache, value_cache): (&[f32], &[f32]),
    heads: Heads,
    keys0: usize,
    scale: f32,
    y: &mut [f32],
) {
    if q.len() / heads.qkv_width() >= fast::attention::MIN_ROWS {
        fast::attention::prefill(q, key_cache, value_cache, heads, keys0, scale, y)
    } else if !fast::attention_step::run(q, key_cache, value_cache, heads, keys0, scale, y) {
        attention::run_cpu(q, key_cache, value_cache, heads, keys0, scale, y)
    }
}

/// Each row's rotary turns, for every block's [`rope::run_cpu`] (empty: the
/// family has no rotary positions; GPT-2 added its own to `x`).
fn turns(c: &Config, seqs: &[Seq]) -> Vec<(f32, f32)> {
    let Some(llama) = c.llama() else { return Vec::new() };
    let inv_freq = llama.rope.inv_freq(c.head_size);
    seqs.iter().flat_map(|s| rope::turns(&inv_freq, s.turn0, s.rows)).collect()
}

/// The block's MLP on the normed rows `xb` into `proj` (n, n_embd): GELU
/// on one matrix's outputs (GPT-2), or SwiGLU on the `gate | up` pair
/// into `act`. `fc` and `act` are sized on the first block, kept for the rest.
fn mlp(c: &Config, lw: &LayerWeights, xb: &[f32], hidden: &mut Hidden, proj: &mut [f32]) {
    let Hidden { fc, act } = hidden;
    let n = xb.len() / c.n_embd;
    fc.resize(n * lw.c_fc_weight.cols, 0.0); // (n, n_inner), or (n, 2 * n_inner) gate, up in turn
    fast::matmul::run(xb, &lw.c_fc_weight, &lw.c_fc_bias, fc);
    match c.family {
        Family::Gpt2 => {
            gelu::run_cpu(fc);
            fast::matmul::run(fc, &lw.mlp_proj_weight, &lw.mlp_proj_bias, proj);
        }
        Family::Llama(_) => {
            act.resize(n * c.n_inner, 0.0);
            swiglu::run_cpu(fc, act);
            fast::matmul::run(act, &lw.mlp_proj_weight, &lw.mlp_proj_bias, proj);
        }
    }
}

/// The MLP's hidden rows of a pass.
#[derive(Default)]
struct Hidden {
    fc: Vec<f32>,  // (n, n_inner), or (n, 2 * n_inner): gate, up in turn
    act: Vec<f32>, // (n, n_inner) SwiGLU's output (the Llama family)
}

/// Runs `tokens` (the rows of `seqs`, in order) through the model, appending
/// each row's k and v to its sequence's cache; returns the logits `wanted`
/// (`All`: every row's, `(n, vocab_size)`). What `seen` asks for is appended.
pub fn run(
    model: &Model,
    seqs: &mut [Seq],
    tokens: &[u32],
    wanted: Wanted,
    seen: &mut Seen,
) -> Vec<f32> {
    // The MLP's first matmul (GPT-2's n_embd × n_inner, the Llama family's
    // gate | up pair, twice as wide): where the blocks' kernels run whole
    // (the bundled model's decode step: 256 × 1024) and only the LM head
    // would be shared, a team's helper would spin through the whole pass
    // for one part of one kernel, holding a thread another pass could use.
    let work = model
        .weights
        .layers
        .first()
        .map_or(0, |lw| tokens.len() * lw.c_fc_weight.rows * lw.c_fc_weight.cols);
    fast::parallel::on_pool(work, || run_here(model, seqs, tokens, wanted, seen))
}

/// [`run`]'s pass, on whichever thread [`run`] gives it.
fn run_here(
    model: &Model,
    seqs: &mut [Seq],
    tokens: &[u32],
    wanted: Wanted,
    seen: &mut Seen,
) -> Vec<f32> {
    let c = &model.config;
    let (n, e) = (tokens.len(), c.n_embd);
    debug_assert_eq!(seqs.iter().map(|s| s.rows).sum::<usize>(), n);
    let w = &model.weights;
    let mut x = vec![0.0; n * e]; // (n, n_embd) residual stream
    let mut xb = vec![0.0; n * e]; // (n, n_embd) norm output
    let mut qkv = vec![0.0; n * c.qkv_width()]; // (n, n_embd + 2 * kv_dim)
    let mut y = vec![0.0; n * e]; // (n, n_embd) attention output
    let mut proj = vec![0.0; n * e]; // (n, n_embd) block output
    let mut hidden = Hidden::default(); // the MLP's hidden rows
    let turns = turns(c, seqs); // (n, head_size / 2), or empty
    let mut row0 = 0;
    for s in seqs.iter() {
        let rows = row0..row0 + s.rows;
        let x_rows = &mut x[row0 * e..rows.end * e];
        embedding::run_cpu(&tokens[rows.clone()], &w.wte, 0, &w.wpe, s.pos0, x_rows);
        row0 = rows.end;
    }
    seen.residual(&x);
    for (l, lw) in w.layers.iter().enumerate() {
        norm(c, &lw.ln_1_weight, &lw.ln_1_bias, &x, &mut xb);
        fast::matmul::run(&xb, &lw.c_attn_weight, &lw.c_attn_bias, &mut qkv);
        if !turns.is_empty() {
            rope::run_cpu(&mut qkv, c.heads(), &turns);
        }
        attend(c, l, seqs, &qkv, &mut y, seen);
        fast::matmul::run(&y, &lw.attn_proj_weight, &lw.attn_proj_bias, &mut proj);
        residual_add::run_cpu(&proj, &mut x);
        norm(c, &lw.ln_2_weight, &lw.ln_2_bias, &x, &mut xb);
        mlp(c, lw, &xb, &mut hidden, &mut proj);
        residual_add::run_cpu(&proj, &mut x);
        seen.residual(&x);
    }
    norm(c, &w.ln_f_weight, &w.ln_f_bias, &x, &mut xb);
    let (lm_row0, n_out) = match wanted {
        Wanted::Last => (n - 1, 1),
        Wanted::All => (0, n),
    };
    let mut logits = vec![0.0; n_out * c.vocab_size]; // (n_out, vocab_size)
    fast::lm_head::run(&xb, w.lm_head(), 0, c.vocab_size, lm_row0, n_out, &mut logits);
    logits
}

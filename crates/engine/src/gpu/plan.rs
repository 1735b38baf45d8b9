//! The forward pass as a list of dispatches, in data-flow order: each one a
//! kernel's [`Dispatch`] (its shape, which states its `Params`, workgroups and
//! cost) and the buffers it binds, named by their role ([`Buf`]). The plan
//! needs no device — only the model's shape, the kernel [`Profile`] and how
//! the embedding is sharded ([`Layout`]) — so its cost records can be summed
//! and checked anywhere (`tests/kernel_cost.rs`); `ops.rs` binds it to a
//! session's buffers once, when the session opens. Which kernel runs each
//! step is the profile's choice: the lists below are written once for both.

use crate::kernels::{
    attention, attention_combine, attention_probs, attention_split, embedding, gelu, kv_mass,
    kv_renumber, kv_write, layernorm, lm_head, lm_head_split, matmul, matmul_split, matmul_tiled,
    residual_add, rms_norm, rope, swiglu, At, Cost, Dispatch, Kernel, Profile, Split,
};
use crate::model::Config;
use crate::storage::format::Format;
use crate::storage::matrix::{shard_rows, shards};

pub use super::buf::{Buf, Weight};

/// What a plan depends on: the model's shape, its weights' format, the
/// kernel profile and the vocabulary rows of each shard of the embedding and
/// the LM head.
#[derive(Clone, Debug)]
pub struct Layout<'a> {
    pub config: &'a Config,
    pub format: Format,
    pub profile: Profile,
    pub wte: Vec<(u32, u32)>,  // (v0, n_vocab) per shard
    pub head: Vec<(u32, u32)>, // (v0, n_vocab) per shard
}

impl<'a> Layout<'a> {
    /// The layout of a model of `config` in `format` on a device whose
    /// bindings hold `max_binding` bytes: without a device, for the cost records.
    pub fn of(
        config: &'a Config,
        format: Format,
        profile: Profile,
        max_binding: u64,
    ) -> Layout<'a> {
        let (vocab, e) = (config.vocab_size, config.n_embd);
        let per = shard_rows(format, vocab, e, max_binding).unwrap_or(vocab);
        let cut: Vec<(u32, u32)> =
            shards(vocab, per).into_iter().map(|(a, n)| (a as u32, n as u32)).collect();
        Layout { config, format, profile, wte: cut.clone(), head: cut }
    }
}

/// One dispatch of a pass, before it is bound to buffers.
pub struct Spec {
    pub dispatch: Box<dyn Dispatch>,
    /// Bindings 1.. in order; a weight matrix's scales bind with it.
    pub buffers: Vec<Buf>,
    /// In a batched step, the sequence this op works on alone (its own
    /// position, its own KV cache); `None`: every row of the pass.
    pub seq: Option<usize>,
}

/// One sequence's place in a batched step: its row of the shared buffers
/// (tokens, x, qkv, y) and the position its token takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seat {
    pub row: u32,
    pub place: Place,
}

/// Where a pass's first row goes: its position, its cache slot and the
/// slots held before it (see [`At`](crate::kernels::At)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub pos0: u32,
    pub slot0: u32,
    pub keys0: u32,
    pub turn0: u32,
    pub renumbered: u32,
}

impl Place {
    /// A cache that holds every token: slot = position.
    pub fn at(pos: usize) -> Place {
        let pos = pos as u32;
        Place { pos0: pos, slot0: pos, keys0: pos, turn0: pos, renumbered: 0 }
    }
}

/// The pass an op list is encoded for.
#[derive(Clone, Copy, Debug)]
pub struct Pass<'a> {
    pub n_rows: u32,
    pub place: Place,
    /// First row and row count of the logits to compute.
    pub lm_row0: u32,
    pub lm_rows: u32,
    /// A batched step's sequences by index (`None`: it sits this step out);
    /// empty for a single session's pass.
    pub seats: &'a [Option<Seat>],
}

impl Pass<'_> {
    /// A single session's pass over `n_rows` tokens at `place`.
    pub fn single(n_rows: u32, place: Place, lm_row0: u32, lm_rows: u32) -> Pass<'static> {
        Pass { n_rows, place, lm_row0, lm_rows, seats: &[] }
    }
}

/// Where a dispatch working on `seq` (see [`Spec::seq`]) runs in `pass`:
/// `None` for a batch's sequence that sits the step out.
pub fn at<'c>(config: &'c Config, seq: Option<usize>, pass: &Pass) -> Option<At<'c>> {
    // A sequence's own op: its one row, at its own position.
    let (n_rows, place, row0) = match seq {
        None => (pass.n_rows, pass.place, 0),
        Some(s) => {
            let seat = (*pass.seats.get(s)?)?;
            (1, seat.place, seat.row)
        }
    };
    let (lm_row0, lm_rows) = (pass.lm_row0, pass.lm_rows);
    let Place { pos0, slot0, keys0, turn0, renumbered } = place;
    Some(At { config, n_rows, pos0, slot0, keys0, turn0, renumbered, row0, lm_row0, lm_rows })
}

/// The cost record of every dispatch of `specs` in `pass` (those that run).
pub fn costs(layout: &Layout, specs: &[Spec], pass: &Pass) -> Vec<(Kernel, Cost)> {
    let run = specs.iter().filter_map(|s| Some((s, at(layout.config, s.seq, pass)?)));
    run.map(|(s, at)| (s.dispatch.kernel(), s.dispatch.cost(&at, layout.format))).collect()
}

/// A pass's dispatches, and where in them the residual stream is whole.
pub struct Built {
    pub specs: Vec<Spec>,
    /// `n_layer + 1` op counts: after the first `residual_ends[0]` ops the
    /// scratch `x` holds the embedding (block 0's input), after the first
    /// `residual_ends[l + 1]` block `l`'s output — where a logit-lens probe
    /// copies it out.
    pub residual_ends: Vec<usize>,
}

/// The op list a pass is building.
pub(super) struct Ops(Vec<Spec>);

impl Ops {
    /// Appends one dispatch over `buffers` (bindings 1.. in order) for every row.
    pub(super) fn op(&mut self, dispatch: impl Dispatch + 'static, buffers: &[Buf]) {
        self.op_for(None, dispatch, buffers);
    }

    /// [`op`](Self::op) for one sequence of a batch (`None`: every row).
    fn op_for(&mut self, seq: Option<usize>, dispatch: impl Dispatch + 'static, buffers: &[Buf]) {
        self.0.push(Spec { dispatch: Box::new(dispatch), buffers: buffers.to_vec(), seq });
    }
}

/// The LM head's dispatches (one per shard of the head) writing the logits.
pub fn lm_head(layout: &Layout) -> Vec<Spec> {
    let mut ops = Ops(Vec::new());
    for (i, &(v0, n_vocab)) in layout.head.iter().enumerate() {
        let buffers = [Buf::Xb, Buf::Head(i), Buf::Logits];
        match layout.profile {
            Profile::Cpu => ops.op(lm_head::Shape { v0, n_vocab }, &buffers),
            Profile::Gpu(_) => ops.op(lm_head_split::Shape { v0, n_vocab }, &buffers),
        }
    }
    ops.0
}

/// What a cache policy adds to a single session's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyOps {
    /// Each block adds its attention to the slots' heavy-hitter totals.
    pub mass: bool,
    /// Each block first turns back the keys of the slots after an evicted
    /// token (StreamingLLM's positions within the cache).
    pub renumber: bool,
}

impl PolicyOps {
    /// What `policy` needs.
    pub fn of(policy: crate::kv_policy::KvPolicy) -> PolicyOps {
        PolicyOps { mass: policy.ranks_by_mass(), renumber: policy.renumbers() }
    }
}

/// The dispatches of a prefill: one pass over every row of the prompt.
pub fn prefill(layout: &Layout, policy: PolicyOps) -> Built {
    let rows = Rows { policy, ..Rows::prefill(layout.profile) };
    pass(layout, |ops, l| block_by_rows(layout, ops, l, &[None], rows))
}

/// The dispatches of a short prefill, at most [`matmul_split::MAX_ROWS`]
/// rows (a speculative verification, a short prompt): on real GPUs the
/// linear layers read each weight once for every row (matmul_split), where
/// matmul_tiled's 64-row blocks would be nearly empty. `None` in the cpu
/// profile, whose prefill serves every length.
pub fn short_prefill(layout: &Layout, policy: PolicyOps) -> Option<Built> {
    let Profile::Gpu(split) = layout.profile else { return None };
    let rows = Rows { policy, linear: Linear::Split(split), ..Rows::prefill(layout.profile) };
    Some(pass(layout, |ops, l| block_by_rows(layout, ops, l, &[None], rows)))
}

/// The dispatches of a batched decode step over `n_seqs` sequences, one
/// token each (row `b` of the shared buffers is sequence `b`'s): the blocks'
/// linear layers run over every row at once, so each weight is read once per
/// step for the whole batch; each sequence's embedding, K/V write and
/// attention are its own dispatches, at its own position over its own cache.
pub fn batch(layout: &Layout, n_seqs: usize) -> Vec<Spec> {
    let mut ops = Ops(Vec::new());
    for b in 0..n_seqs {
        ops.0.extend(embedding(layout).into_iter().map(|spec| Spec { seq: Some(b), ..spec }));
    }
    let rows = Rows::batch(layout.profile, n_seqs);
    let seqs: Vec<Option<usize>> = (0..n_seqs).map(Some).collect();
    for l in 0..layout.config.n_layer {
        block_by_rows(layout, &mut ops, l, &seqs, rows);
    }
    ops.0.extend(final_layernorm_and_lm_head(layout));
    ops.0
}

/// How a block runs over the rows of a pass (prefill's, or a batch's): its
/// linear layers' kernel, its norms' profile, and its attention.
#[derive(Clone, Copy)]
struct Rows {
    linear: Linear,
    profile: Profile,
    /// One query row per sequence: flash-decoding (the gpu profile's batch).
    split_attention: bool,
    /// What a single session's cache policy adds to each block.
    policy: PolicyOps,
}

/// The kernel of a block's linear layers over the rows of a pass.
#[derive(Clone, Copy)]
enum Linear {
    Matmul,
    Tiled,
    Split(Split),
}

impl Rows {
    /// A prefill's: any number of rows.
    fn prefill(profile: Profile) -> Rows {
        let linear = match profile {
            Profile::Cpu => Linear::Matmul,
            Profile::Gpu(_) => Linear::Tiled,
        };
        Rows { linear, profile, split_attention: false, policy: PolicyOps::default() }
    }

    /// A batch of `n` sequences' (one row each): on real GPUs the weights
    /// read once for up to eight rows by the split matmul, and each
    /// sequence's attention split over its keys.
    fn batch(profile: Profile, n: usize) -> Rows {
        let split_attention = profile != Profile::Cpu;
        let linear = match profile {
            Profile::Gpu(split) if n <= matmul_split::MAX_ROWS => Linear::Split(split),
            _ => Rows::prefill(profile).linear,
        };
        Rows { linear, split_attention, ..Rows::prefill(profile) }
    }

    /// The linear layer `[k] → [n]` over `buffers`.
    fn linear(self, ops: &mut Ops, k: u32, n: u32, buffers: &[Buf]) {
        match self.linear {
            Linear::Matmul => ops.op(matmul::Shape { k, n }, buffers),
            Linear::Tiled => ops.op(matmul_tiled::Shape { k, n }, buffers),
            Linear::Split(split) => ops.op(matmul_split::Shape { k, n, split }, buffers),
        }
    }

    /// The family's norm: GPT-2's LayerNorm, the Llama family's RMSNorm.
    fn norm(self, ops: &mut Ops, c: &Config, buffers: &[Buf]) {
        norm(ops, c, self.profile, buffers);
    }
}

/// One block over every row of the pass; the K/V write and attention run
/// once per entry of `seqs` (the session's cache, `None`, in a prefill; each
/// sequence's in a batched step).
fn block_by_rows(layout: &Layout, ops: &mut Ops, l: usize, seqs: &[Option<usize>], rows: Rows) {
    use Buf::*;
    let c = layout.config;
    let (e, inner) = (c.n_embd as u32, c.n_inner as u32);
    let w = |role| Layer(l, role);
    let rotary = c.llama().is_some();
    rows.norm(ops, c, &[X, w(Weight::Ln1), Xb]);
    let width = c.qkv_width() as u32;
    rows.linear(ops, e, width, &[Xb, w(Weight::CAttn), w(Weight::CAttnBias), Qkv]);
    for &seq in seqs {
        let (kc, vc) = (Key(seq.unwrap_or(0), l), Value(seq.unwrap_or(0), l));
        if rows.policy.renumber {
            ops.op_for(seq, kv_renumber::Shape, &[kc, Renumbered, Turns]);
        }
        if rotary {
            ops.op_for(seq, rope::Shape, &[Qkv, Turns]);
        }
        ops.op_for(seq, kv_write::Shape, &[Qkv, kc, vc]);
        let scale = c.attn_scale(l);
        if rows.split_attention {
            ops.op_for(seq, attention_split::Shape { scale }, &[Qkv, kc, vc, Parts]);
            ops.op_for(seq, attention_combine::Shape, &[Parts, Y]);
        } else {
            ops.op_for(seq, attention::Shape { scale }, &[Qkv, kc, vc, Y]);
        }
        if rows.policy.mass {
            add_mass(ops, kc, scale);
        }
    }
    rows.linear(ops, e, e, &[Y, w(Weight::AttnProj), w(Weight::AttnProjBias), Proj]);
    ops.op(residual_add::Shape { cols: e }, &[Proj, X]);
    rows.norm(ops, c, &[X, w(Weight::Ln2), Xb]);
    let act = match rotary {
        // SwiGLU: the gate | up pair in one matmul, then silu(gate) · up.
        true => {
            rows.linear(ops, e, 2 * inner, &[Xb, w(Weight::CFc), w(Weight::CFcBias), Fc]);
            ops.op(swiglu::Shape { n_inner: inner }, &[Fc, Act]);
            Act
        }
        false => {
            rows.linear(ops, e, inner, &[Xb, w(Weight::CFc), w(Weight::CFcBias), Fc]);
            ops.op(gelu::Shape { cols: inner }, &[Fc]);
            Fc
        }
    };
    rows.linear(ops, inner, e, &[act, w(Weight::MlpProj), w(Weight::MlpProjBias), Proj]);
    ops.op(residual_add::Shape { cols: e }, &[Proj, X]);
}

/// A heavy-hitter session's block adds the attention its rows gave each
/// held slot to that slot's total, on the device (`attention_probs`, then
/// `kv_mass`). Placed after the block: the weights are the attention's own
/// (the same query and keys), and the block's other ops never read them.
pub(super) fn add_mass(ops: &mut Ops, key_cache: Buf, scale: f32) {
    ops.op(attention_probs::Shape { scale }, &[Buf::Qkv, key_cache, Buf::Probs]);
    ops.op(kv_mass::Shape, &[Buf::Probs, Buf::Mass]);
}

/// A whole pass: the embedding, `block` for each layer, then ln_f and the LM head.
pub(super) fn pass(layout: &Layout, mut block: impl FnMut(&mut Ops, usize)) -> Built {
    let mut ops = Ops(embedding(layout));
    let mut residual_ends = vec![ops.0.len()];
    for l in 0..layout.config.n_layer {
        block(&mut ops, l);
        residual_ends.push(ops.0.len());
    }
    ops.0.extend(final_layernorm_and_lm_head(layout));
    Built { specs: ops.0, residual_ends }
}

/// The embedding's dispatches, one per shard of `wte`.
fn embedding(layout: &Layout) -> Vec<Spec> {
    let mut ops = Ops(Vec::new());
    for (i, &(v0, n_vocab)) in layout.wte.iter().enumerate() {
        let buffers = [Buf::Tokens, Buf::Wte(i), Buf::Wpe, Buf::X];
        ops.op(embedding::Shape { v0, n_vocab }, &buffers);
    }
    ops.0
}

/// `ln_f`, then the LM head.
fn final_layernorm_and_lm_head(layout: &Layout) -> Vec<Spec> {
    let mut ops = Ops(Vec::new());
    norm(&mut ops, layout.config, layout.profile, &[Buf::X, Buf::LnF, Buf::Xb]);
    ops.0.extend(lm_head(layout));
    ops.0
}

/// The family's norm over every row, a workgroup a row.
fn norm(ops: &mut Ops, c: &Config, profile: Profile, buffers: &[Buf]) {
    match c.llama() {
        Some(_) => ops.op(rms_norm::Shape { wg: profile.wg(Kernel::RmsNorm) }, buffers),
        None => ops.op(layernorm::Shape { wg: profile.wg(Kernel::Layernorm) }, buffers),
    }
}

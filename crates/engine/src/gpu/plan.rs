//! The forward pass as a list of dispatches, built once per session: pipeline,
//! bind group and the shape its `Params` are computed from. Encoding a step is
//! then a loop with no allocation of GPU objects. Op `i` reads its `Params`
//! from slot `i` of the session's uniform buffer; the slot count is the
//! length of the op lists (one dispatch per shard of a split embedding).

use crate::gpu::model::GpuLayer;
use crate::gpu::GpuModel;
use crate::kernels::{
    attention, embedding, gelu, kv_write, layernorm, lm_head, ln_fc_gelu, ln_qkv, matmul,
    matvec_residual, residual_add, Kernel,
};
use crate::storage::format::SCALES_BINDING;

/// Bytes between parameter slots: the largest `min_uniform_buffer_offset_alignment`.
pub const SLOT: u64 = 256;

/// Bytes of the largest kernel `Params` (what each slot's binding covers).
pub const PARAMS: usize = 32;

/// What a dispatch's `Params` and workgroup count depend on, besides the pass.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// One shard of the embedding: vocabulary rows `v0..v0 + n_vocab`.
    Embedding {
        v0: u32,
        n_vocab: u32,
    },
    Layernorm,
    /// A linear layer `[k] → [n]` over every row (prefill's matmul).
    Linear {
        k: u32,
        n: u32,
    },
    /// Decode's LayerNorm → QKV → K/V write for one token.
    LnQkv,
    /// Decode's LayerNorm → `[n_embd] → [n]` → GELU for one token.
    LnFcGelu {
        n: u32,
    },
    /// Decode's `[k] → [n]` projection added into the residual stream.
    MatvecResidual {
        k: u32,
        n: u32,
    },
    KvWrite,
    Attention {
        scale: f32,
    },
    /// An element-wise op over `cols` columns of every row.
    Elementwise {
        cols: u32,
    },
    /// One shard of the LM head: vocabulary rows `v0..v0 + n_vocab`.
    LmHead {
        v0: u32,
        n_vocab: u32,
    },
}

/// One dispatch of the forward pass.
pub struct Op {
    pub kernel: Kernel,
    pub bind_group: wgpu::BindGroup,
    pub shape: Shape,
    /// In a batched step, the sequence this op works on alone (its own
    /// position, its own KV cache); `None`: every row of the pass.
    pub seq: Option<usize>,
}

/// One sequence's place in a batched step: its row of the shared buffers
/// (tokens, x, qkv, y) and the position its token takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seat {
    pub row: u32,
    pub pos: u32,
}

/// The pass an op list is encoded for.
#[derive(Clone, Copy, Debug)]
pub struct Pass<'a> {
    pub n_rows: u32,
    pub pos0: u32,
    /// First row and row count of the logits to compute.
    pub lm_row0: u32,
    pub lm_rows: u32,
    /// A batched step's sequences by index (`None`: it sits this step out);
    /// empty for a single session's pass.
    pub seats: &'a [Option<Seat>],
}

impl Pass<'_> {
    /// A single session's pass over `n_rows` tokens from `pos0`.
    pub fn single(n_rows: u32, pos0: u32, lm_row0: u32, lm_rows: u32) -> Pass<'static> {
        Pass { n_rows, pos0, lm_row0, lm_rows, seats: &[] }
    }
}

impl Op {
    /// Writes this op's `Params` for `pass` into `slot` (its uniform slot) and
    /// returns the workgroup count: none for a batch's sequence that sits the
    /// step out. No allocation: this runs for every dispatch of every decode step.
    pub fn params(&self, gpu: &GpuModel, pass: &Pass, slot: &mut [u8]) -> Option<[u32; 3]> {
        let c = gpu.config();
        let e = c.n_embd as u32;
        // A sequence's own op: its one row, at its own position.
        let (n_rows, pos0, row0) = match self.seq {
            None => (pass.n_rows, pass.pos0, 0),
            Some(s) => {
                let seat = (*pass.seats.get(s)?)?;
                (1, seat.pos, seat.row)
            }
        };
        let mut put = |p: &[u8]| slot[..p.len()].copy_from_slice(p);
        Some(match self.shape {
            Shape::Embedding { v0, n_vocab } => {
                let p = embedding::Params {
                    n_rows,
                    n_embd: e,
                    pos0,
                    v0,
                    n_vocab,
                    row0,
                    _pad1: 0,
                    _pad2: 0,
                };
                {
                    put(bytemuck::bytes_of(&p));
                    embedding::workgroups(&p)
                }
            }
            Shape::Layernorm => {
                let p = layernorm::Params { n_rows, n_embd: e, eps: c.layer_norm_epsilon, _pad: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    layernorm::workgroups(&p)
                }
            }
            Shape::Linear { k, n } => {
                let p = matmul::Params { m: n_rows, k, n, _pad: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    matmul::workgroups(&p)
                }
            }
            Shape::LnQkv => {
                let p = ln_qkv::Params { n_embd: e, pos: pos0, eps: c.layer_norm_epsilon, _pad: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    ln_qkv::workgroups(&p)
                }
            }
            Shape::LnFcGelu { n } => {
                let p = ln_fc_gelu::Params { n_embd: e, n, eps: c.layer_norm_epsilon, _pad: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    ln_fc_gelu::workgroups(&p)
                }
            }
            Shape::MatvecResidual { k, n } => {
                let p = matvec_residual::Params { k, n, _pad0: 0, _pad1: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    matvec_residual::workgroups(&p)
                }
            }
            Shape::KvWrite => {
                let p = kv_write::Params { n_rows, n_embd: e, pos0, row0 };
                {
                    put(bytemuck::bytes_of(&p));
                    kv_write::workgroups(&p)
                }
            }
            Shape::Attention { scale } => {
                let head_size = c.head_size as u32;
                let p = attention::Params {
                    n_rows,
                    pos0,
                    n_embd: e,
                    head_size,
                    scale,
                    row0,
                    _pad1: 0,
                    _pad2: 0,
                };
                {
                    put(bytemuck::bytes_of(&p));
                    attention::workgroups(&p)
                }
            }
            Shape::Elementwise { cols } if self.kernel == Kernel::Gelu => {
                let p = gelu::Params { n: n_rows * cols, _pad0: 0, _pad1: 0, _pad2: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    gelu::workgroups(&p)
                }
            }
            Shape::Elementwise { cols } => {
                let p = residual_add::Params { n: n_rows * cols, _pad0: 0, _pad1: 0, _pad2: 0 };
                {
                    put(bytemuck::bytes_of(&p));
                    residual_add::workgroups(&p)
                }
            }
            Shape::LmHead { v0, n_vocab } => {
                let p = lm_head::Params {
                    n_out: pass.lm_rows,
                    row0: pass.lm_row0,
                    n_embd: e,
                    vocab_size: c.vocab_size as u32,
                    v0,
                    n_vocab,
                    _pad0: 0,
                    _pad1: 0,
                };
                {
                    put(bytemuck::bytes_of(&p));
                    lm_head::workgroups(&p)
                }
            }
        })
    }
}

/// Buffers a plan binds that belong to the session rather than the model.
pub struct SessionBuffers<'a> {
    pub key_cache: &'a [wgpu::Buffer],
    pub value_cache: &'a [wgpu::Buffer],
    pub logits: &'a wgpu::Buffer,
}

/// A dispatch before it is bound to its uniform slot: what [`build`] lists,
/// so the slot count (the uniform buffer's size) is the list's length.
pub struct Spec<'a> {
    kernel: Kernel,
    shape: Shape,
    buffers: Vec<&'a wgpu::Buffer>,
    /// The scales of the op's weight matrix, in the formats that have them.
    scales: Option<&'a wgpu::Buffer>,
    /// See [`Op::seq`].
    seq: Option<usize>,
}

/// Binds `specs` to consecutive slots of `params` from `first_slot` on.
pub fn bind_all(
    gpu: &GpuModel,
    params: &wgpu::Buffer,
    first_slot: usize,
    specs: &[Spec],
) -> Vec<Op> {
    let slots = (first_slot as u64..).zip(specs);
    slots
        .map(|(slot, s)| Op {
            kernel: s.kernel,
            bind_group: bind(gpu, s.kernel, params, slot, &s.buffers, s.scales),
            shape: s.shape,
            seq: s.seq,
        })
        .collect()
}

/// The LM head's dispatches (one per shard of the head) writing `logits`.
pub fn lm_head<'a>(gpu: &'a GpuModel, logits: &'a wgpu::Buffer) -> Vec<Spec<'a>> {
    let shards = gpu.lm_head().iter();
    shards
        .map(|h| Spec {
            kernel: Kernel::LmHead,
            shape: Shape::LmHead { v0: h.v0, n_vocab: h.n_vocab },
            buffers: vec![&gpu.scratch.xb, &h.matrix.words, logits],
            scales: h.matrix.sc(),
            seq: None,
        })
        .collect()
}

/// The dispatches of a prefill: one pass over every row of the prompt.
pub fn prefill<'a>(gpu: &'a GpuModel, s: &SessionBuffers<'a>) -> Built<'a> {
    pass(gpu, s, |push, l, w, cache| unfused_block(gpu, push, l, w, &[(None, cache)]))
}

/// The dispatches of a batched decode step over `seqs.len()` sequences, one
/// token each (row `b` of the shared buffers is sequence `b`'s): the blocks'
/// linear layers run as one matmul over every row, so each weight is read
/// once per step for the whole batch; each sequence's embedding, K/V write
/// and attention are its own dispatches, at its own position over its own cache.
pub fn batch<'a>(
    gpu: &'a GpuModel,
    seqs: &[Caches<'a>],
    logits: &'a wgpu::Buffer,
) -> Vec<Spec<'a>> {
    let mut ops = Ops(Vec::new());
    for b in 0..seqs.len() {
        ops.0.extend(embedding(gpu).into_iter().map(|spec| Spec { seq: Some(b), ..spec }));
    }
    for (l, w) in gpu.layers.iter().enumerate() {
        let seats = seqs.iter().enumerate();
        let attend: Vec<_> =
            seats.map(|(b, s)| (Some(b), (&s.key_cache[l], &s.value_cache[l]))).collect();
        unfused_block(gpu, &mut ops, l, w, &attend);
    }
    ops.0.extend(final_layernorm_and_lm_head(gpu, logits));
    ops.0
}

/// One block with prefill's kernels over every row of the pass; the K/V
/// write and attention run once per entry of `attend` (the session's cache
/// in a prefill, each sequence's in a batched step).
fn unfused_block<'a>(
    gpu: &'a GpuModel,
    push: &mut Ops<'a>,
    l: usize,
    w: &'a GpuLayer,
    attend: &[(Option<usize>, Cache<'a>)],
) {
    let c = gpu.config();
    let (e, inner) = (c.n_embd as u32, c.n_inner as u32);
    let sc = &gpu.scratch;
    push.op(Kernel::Layernorm, Shape::Layernorm, &[&sc.x, &w.ln_1, &sc.xb], None);
    let (qkv, m) = (Shape::Linear { k: e, n: 3 * e }, &w.c_attn_weight);
    push.op(Kernel::Matmul, qkv, &[&sc.xb, &m.words, &w.c_attn_bias, &sc.qkv], m.sc());
    for &(seq, (kc, vc)) in attend {
        push.op_for(seq, Kernel::KvWrite, Shape::KvWrite, &[&sc.qkv, kc, vc], None);
        let attention = Shape::Attention { scale: c.attn_scale(l) };
        push.op_for(seq, Kernel::Attention, attention, &[&sc.qkv, kc, vc, &sc.y], None);
    }
    let (proj, m) = (Shape::Linear { k: e, n: e }, &w.attn_proj_weight);
    push.op(Kernel::Matmul, proj, &[&sc.y, &m.words, &w.attn_proj_bias, &sc.proj], m.sc());
    push.op(Kernel::ResidualAdd, Shape::Elementwise { cols: e }, &[&sc.proj, &sc.x], None);
    push.op(Kernel::Layernorm, Shape::Layernorm, &[&sc.x, &w.ln_2, &sc.xb], None);
    let (fc, m) = (Shape::Linear { k: e, n: inner }, &w.c_fc_weight);
    push.op(Kernel::Matmul, fc, &[&sc.xb, &m.words, &w.c_fc_bias, &sc.fc], m.sc());
    push.op(Kernel::Gelu, Shape::Elementwise { cols: inner }, &[&sc.fc], None);
    let (mlp, m) = (Shape::Linear { k: inner, n: e }, &w.mlp_proj_weight);
    push.op(Kernel::Matmul, mlp, &[&sc.fc, &m.words, &w.mlp_proj_bias, &sc.proj], m.sc());
    push.op(Kernel::ResidualAdd, Shape::Elementwise { cols: e }, &[&sc.proj, &sc.x], None);
}

/// The dispatches of a decode step: one token, each block fused into five
/// (ln_qkv, attention, matvec_residual, ln_fc_gelu, matvec_residual).
pub fn decode<'a>(gpu: &'a GpuModel, s: &SessionBuffers<'a>) -> Built<'a> {
    let c = gpu.config();
    let (e, inner) = (c.n_embd as u32, c.n_inner as u32);
    let sc = &gpu.scratch;
    pass(gpu, s, |push, l, w, (kc, vc)| {
        let m = &w.c_attn_weight;
        let qkv = [&sc.x, &w.ln_1, &m.words, &w.c_attn_bias, &sc.qkv, kc, vc];
        push.op(Kernel::LnQkv, Shape::LnQkv, &qkv, m.sc());
        let attention = Shape::Attention { scale: c.attn_scale(l) };
        push.op(Kernel::Attention, attention, &[&sc.qkv, kc, vc, &sc.y], None);
        let (proj, m) = (Shape::MatvecResidual { k: e, n: e }, &w.attn_proj_weight);
        let buffers = [&sc.y, &m.words, &w.attn_proj_bias, &sc.x];
        push.op(Kernel::MatvecResidual, proj, &buffers, m.sc());
        let (fc, m) = (Shape::LnFcGelu { n: inner }, &w.c_fc_weight);
        push.op(Kernel::LnFcGelu, fc, &[&sc.x, &w.ln_2, &m.words, &w.c_fc_bias, &sc.fc], m.sc());
        let (mlp, m) = (Shape::MatvecResidual { k: inner, n: e }, &w.mlp_proj_weight);
        let buffers = [&sc.fc, &m.words, &w.mlp_proj_bias, &sc.x];
        push.op(Kernel::MatvecResidual, mlp, &buffers, m.sc());
    })
}

/// A layer's (key, value) cache.
type Cache<'a> = (&'a wgpu::Buffer, &'a wgpu::Buffer);

/// One sequence's KV cache, every layer.
pub struct Caches<'a> {
    pub key_cache: &'a [wgpu::Buffer], // (n_layer) × (n_positions, n_embd)
    pub value_cache: &'a [wgpu::Buffer], // (n_layer) × (n_positions, n_embd)
}

/// The op list a pass is building.
struct Ops<'a>(Vec<Spec<'a>>);

impl<'a> Ops<'a> {
    /// Appends one dispatch of `kernel` over `buffers` (bindings 1.. in order).
    fn op(
        &mut self,
        kernel: Kernel,
        shape: Shape,
        buffers: &[&'a wgpu::Buffer],
        scales: Option<&'a wgpu::Buffer>,
    ) {
        self.op_for(None, kernel, shape, buffers, scales);
    }

    /// [`op`](Self::op) for one sequence of a batch (`None`: every row).
    fn op_for(
        &mut self,
        seq: Option<usize>,
        kernel: Kernel,
        shape: Shape,
        buffers: &[&'a wgpu::Buffer],
        scales: Option<&'a wgpu::Buffer>,
    ) {
        self.0.push(Spec { kernel, shape, buffers: buffers.to_vec(), scales, seq });
    }
}

/// A pass's dispatches, and where in them the residual stream is whole.
pub struct Built<'a> {
    pub specs: Vec<Spec<'a>>,
    /// `n_layer + 1` op counts: after the first `residual_ends[0]` ops the
    /// scratch `x` holds the embedding (block 0's input), after the first
    /// `residual_ends[l + 1]` block `l`'s output — where a logit-lens probe
    /// copies it out.
    pub residual_ends: Vec<usize>,
}

/// A whole pass: the embedding, `block` for each layer, then ln_f and the LM head.
fn pass<'a>(
    gpu: &'a GpuModel,
    s: &SessionBuffers<'a>,
    mut block: impl FnMut(&mut Ops<'a>, usize, &'a GpuLayer, Cache<'a>),
) -> Built<'a> {
    let mut ops = Ops(embedding(gpu));
    let mut residual_ends = vec![ops.0.len()];
    for (l, w) in gpu.layers.iter().enumerate() {
        block(&mut ops, l, w, (&s.key_cache[l], &s.value_cache[l]));
        residual_ends.push(ops.0.len());
    }
    ops.0.extend(final_layernorm_and_lm_head(gpu, s.logits));
    Built { specs: ops.0, residual_ends }
}

/// The embedding's dispatches, one per shard of `wte`.
fn embedding(gpu: &GpuModel) -> Vec<Spec<'_>> {
    let sc = &gpu.scratch;
    let shards = gpu.wte.iter();
    shards
        .map(|h| Spec {
            kernel: Kernel::Embedding,
            shape: Shape::Embedding { v0: h.v0, n_vocab: h.n_vocab },
            buffers: vec![&sc.tokens, &h.matrix.words, &gpu.wpe, &sc.x],
            scales: h.matrix.sc(),
            seq: None,
        })
        .collect()
}

/// `ln_f`, then the LM head.
fn final_layernorm_and_lm_head<'a>(gpu: &'a GpuModel, logits: &'a wgpu::Buffer) -> Vec<Spec<'a>> {
    let sc = &gpu.scratch;
    let ln_f = Spec {
        kernel: Kernel::Layernorm,
        shape: Shape::Layernorm,
        buffers: vec![&sc.x, &gpu.ln_f, &sc.xb],
        scales: None,
        seq: None,
    };
    std::iter::once(ln_f).chain(lm_head(gpu, logits)).collect()
}

/// A bind group: binding 0 is the `Params` slot, bindings 1.. are `buffers`
/// in order, and `scales` (a weight matrix's, when its format has them) at
/// [`SCALES_BINDING`].
pub fn bind(
    gpu: &GpuModel,
    kernel: Kernel,
    params: &wgpu::Buffer,
    slot: u64,
    buffers: &[&wgpu::Buffer],
    scales: Option<&wgpu::Buffer>,
) -> wgpu::BindGroup {
    let layout = gpu.pipelines.get(kernel).get_bind_group_layout(0);
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: params,
            offset: slot * SLOT,
            size: wgpu::BufferSize::new(PARAMS as u64),
        }),
    }];
    for (i, b) in buffers.iter().enumerate() {
        entries
            .push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() });
    }
    if let Some(b) = scales {
        entries.push(wgpu::BindGroupEntry {
            binding: SCALES_BINDING,
            resource: b.as_entire_binding(),
        });
    }
    gpu.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(kernel.name()),
        layout: &layout,
        entries: &entries,
    })
}

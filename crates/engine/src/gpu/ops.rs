//! A plan bound to buffers: each [`Spec`]'s roles resolved to the model's
//! and the session's (or a batch's sessions') buffers, and its bind group
//! made, once, when the session opens. Encoding a step is then a loop with no
//! allocation of GPU objects. Op `i` reads its `Params` from slot `i` of the
//! session's uniform buffer; the slot count is the length of the op lists.

use crate::gpu::model::{GpuLayer, GpuMatrix};
use crate::gpu::plan::{self, Buf, Layout, Pass, Spec, Weight};
use crate::gpu::GpuModel;
use crate::kernels::{Cost, Dispatch, Kernel};
use crate::storage::format::SCALES_BINDING;

/// Bytes between parameter slots: the largest `min_uniform_buffer_offset_alignment`.
pub const SLOT: u64 = 256;

/// Bytes of the largest kernel `Params` (what each slot's binding covers).
pub const PARAMS: usize = 32;

/// One dispatch of the forward pass, bound.
pub struct Op {
    pub dispatch: Box<dyn Dispatch>,
    pub bind_group: wgpu::BindGroup,
    /// See [`Spec::seq`].
    pub seq: Option<usize>,
}

impl Op {
    /// The kernel it dispatches.
    pub fn kernel(&self) -> Kernel {
        self.dispatch.kernel()
    }

    /// Writes this op's `Params` for `pass` into `slot` (its uniform slot) and
    /// returns the workgroup count: none for a batch's sequence that sits the
    /// step out. No allocation: this runs for every dispatch of every decode step.
    pub fn params(&self, gpu: &GpuModel, pass: &Pass, slot: &mut [u8]) -> Option<[u32; 3]> {
        let at = plan::at(gpu.config(), self.seq, pass)?;
        Some(self.dispatch.encode(&at, gpu.format(), slot))
    }

    /// What this op costs in `pass` (see [`Cost`]); `None` where it sits out.
    pub fn cost(&self, gpu: &GpuModel, pass: &Pass) -> Option<Cost> {
        Some(self.dispatch.cost(&plan::at(gpu.config(), self.seq, pass)?, gpu.format()))
    }
}

/// One sequence's KV cache, every layer.
pub struct Caches<'a> {
    pub key_cache: &'a [wgpu::Buffer], // (n_layer) × (n_positions, n_embd)
    pub value_cache: &'a [wgpu::Buffer], // (n_layer) × (n_positions, n_embd)
}

/// The buffers a plan binds that belong to its session (or batch) rather than the model.
pub struct SessionBuffers<'a> {
    /// Each sequence's cache (one for a session).
    pub caches: &'a [Caches<'a>],
    pub logits: &'a wgpu::Buffer,
    /// A heavy-hitter session's (`Buf::Probs`, `Buf::Mass`); a plan binds
    /// them only when they are here (see [`plan::prefill`]).
    pub mass: Option<&'a Totals>,
    /// A renumbering session's list of slots (`Buf::Renumbered`), likewise.
    pub renumbered: Option<&'a wgpu::Buffer>,
}

/// A heavy-hitter session's attention weights of one pass and its running
/// totals per slot (`kv_mass`).
pub struct Totals {
    pub probs: wgpu::Buffer, // (n_head, MASS_ROWS, slots)
    pub mass: wgpu::Buffer,  // (slots)
}

impl GpuModel {
    /// What this model's plans depend on (see [`Layout`]).
    pub fn layout(&self) -> Layout<'_> {
        let cut = |shards: &[crate::gpu::model::GpuShard]| {
            shards.iter().map(|s| (s.v0, s.n_vocab)).collect()
        };
        Layout {
            config: self.config(),
            format: self.format(),
            profile: self.profile(),
            wte: cut(&self.weights.wte),
            head: cut(self.lm_head()),
        }
    }
}

/// Binds `specs` to consecutive slots of `params` from `first_slot` on.
pub fn bind_all(
    gpu: &GpuModel,
    params: &wgpu::Buffer,
    first_slot: usize,
    specs: Vec<Spec>,
    session: &SessionBuffers,
) -> Vec<Op> {
    let slots = (first_slot as u64..).zip(specs);
    slots
        .map(|(slot, s)| {
            let kernel = s.dispatch.kernel();
            let resolved: Vec<_> = s.buffers.iter().map(|&b| resolve(gpu, session, b)).collect();
            let buffers: Vec<&wgpu::Buffer> = resolved.iter().map(|r| r.0).collect();
            // A kernel binds at most one weight matrix: its scales bind with it.
            let scales = resolved.iter().find_map(|r| r.1);
            Op {
                bind_group: bind(gpu, kernel, params, slot, &buffers, scales),
                dispatch: s.dispatch,
                seq: s.seq,
            }
        })
        .collect()
}

/// The buffer of role `b`, and its scales when it is a weight matrix whose format has them.
fn resolve<'a>(
    gpu: &'a GpuModel,
    s: &SessionBuffers<'a>,
    b: Buf,
) -> (&'a wgpu::Buffer, Option<&'a wgpu::Buffer>) {
    let (sc, w) = (&*gpu.scratch, &*gpu.weights);
    let plain = |b: &'a wgpu::Buffer| (b, None);
    let matrix = |m: &'a GpuMatrix| (&m.words, m.sc());
    match b {
        Buf::Tokens => plain(&sc.tokens),
        Buf::X => plain(&sc.x),
        Buf::Xb => plain(&sc.xb),
        Buf::Qkv => plain(&sc.qkv),
        Buf::Y => plain(&sc.y),
        Buf::Proj => plain(&sc.proj),
        Buf::Fc => plain(&sc.fc),
        Buf::Act => plain(&sc.act),
        Buf::Parts => plain(&sc.parts),
        Buf::Wpe => plain(&w.wpe),
        Buf::Turns => plain(&w.turns),
        Buf::LnF => plain(&w.ln_f),
        Buf::Wte(i) => matrix(&w.wte[i].matrix),
        Buf::Head(i) => matrix(&gpu.lm_head()[i].matrix),
        Buf::Layer(l, role) => layer_buffer(&w.layers[l], role),
        Buf::Key(seq, l) => plain(&s.caches[seq].key_cache[l]),
        Buf::Value(seq, l) => plain(&s.caches[seq].value_cache[l]),
        Buf::Logits => plain(s.logits),
        Buf::Renumbered => {
            plain(s.renumbered.expect("a plan adds kv_renumber only for a session that renumbers"))
        }
        Buf::Probs | Buf::Mass => {
            let t =
                s.mass.expect("a plan adds the mass ops only for a session that has the totals");
            plain(if b == Buf::Probs { &t.probs } else { &t.mass })
        }
    }
}

/// A block's buffer of role `role` (and a matrix's scales).
fn layer_buffer(w: &GpuLayer, role: Weight) -> (&wgpu::Buffer, Option<&wgpu::Buffer>) {
    fn matrix(m: &GpuMatrix) -> (&wgpu::Buffer, Option<&wgpu::Buffer>) {
        (&m.words, m.sc())
    }
    match role {
        Weight::Ln1 => (&w.ln_1, None),
        Weight::CAttn => matrix(&w.c_attn_weight),
        Weight::CAttnBias => (&w.c_attn_bias, None),
        Weight::AttnProj => matrix(&w.attn_proj_weight),
        Weight::AttnProjBias => (&w.attn_proj_bias, None),
        Weight::Ln2 => (&w.ln_2, None),
        Weight::CFc => matrix(&w.c_fc_weight),
        Weight::CFcBias => (&w.c_fc_bias, None),
        Weight::MlpProj => matrix(&w.mlp_proj_weight),
        Weight::MlpProjBias => (&w.mlp_proj_bias, None),
    }
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

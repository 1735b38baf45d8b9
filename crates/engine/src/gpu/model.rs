//! The model on the GPU: weights uploaded once, compiled pipelines, and the
//! activation scratch every session of this model shares (a forward pass is
//! written, submitted and read back within one call, so sessions never overlap
//! in it).

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::readback::{buffer, upload, STORAGE};
use crate::gpu::{GpuContext, Pipelines};
use crate::kernels::attention::MAX_HEAD_SIZE;
use crate::kernels::ln_qkv::LN_MAX_EMBD;
use crate::kernels::{attention_split, fused_x_rows, lm_head_split, rope, Profile, WG};
use crate::model::{Config, LayerWeights};
use crate::step::SharedModel;
use crate::storage::format::Format;
use crate::storage::format::SHARD_ALIGN;
use crate::storage::matrix::Matrix;

/// One block's weights as GPU buffers (Conv1D layout, as in [`LayerWeights`]).
/// The four matrices are in the model's weight [`Format`]; the rest f32.
/// A LayerNorm's weight and bias share one buffer: one binding fewer keeps
/// the fused `ln_qkv` within WebGPU's 8 storage buffers per stage.
pub struct GpuLayer {
    pub ln_1: wgpu::Buffer, // (2, n_embd) weight, then bias; RMSNorm: (2 * n_embd + 2 * kv_dim) weight, then c_attn's bias
    pub c_attn_weight: GpuMatrix, // (n_embd, n_embd + 2 * kv_dim) format
    pub c_attn_bias: wgpu::Buffer, // (n_embd + 2 * kv_dim)
    pub attn_proj_weight: GpuMatrix, // (n_embd, n_embd) format
    pub attn_proj_bias: wgpu::Buffer, // (n_embd)
    pub ln_2: wgpu::Buffer, // (2, n_embd) weight, then bias; RMSNorm: (n_embd + 2 * n_inner) weight, then c_fc's bias
    pub c_fc_weight: GpuMatrix, // (n_embd, n_inner) format
    pub c_fc_bias: wgpu::Buffer, // (n_inner)
    pub mlp_proj_weight: GpuMatrix, // (n_inner, n_embd) format
    pub mlp_proj_bias: wgpu::Buffer, // (n_embd)
}

/// A weight matrix on the GPU: its packed words (the kernels' `w` binding)
/// and, in the formats that have them, its scales (binding [`SCALES_BINDING`](crate::storage::format::SCALES_BINDING)).
pub struct GpuMatrix {
    pub words: wgpu::Buffer,          // (rows · cols / per_word) u32, f32 for f32
    pub scales: Option<wgpu::Buffer>, // (format.scale_count) f32
}

impl GpuMatrix {
    fn upload(ctx: &GpuContext, label: &str, m: &Matrix) -> GpuMatrix {
        let scales = m
            .format
            .has_scales()
            .then(|| upload(ctx, &format!("{label} scales"), bytemuck::cast_slice(m.scales())));
        GpuMatrix { words: upload(ctx, label, bytemuck::cast_slice(m.words())), scales }
    }

    /// The scales buffer, if the format has one (what a bind group needs).
    pub fn sc(&self) -> Option<&wgpu::Buffer> {
        self.scales.as_ref()
    }

    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        std::iter::once(&self.words).chain(self.scales.as_ref())
    }
}

/// A matrix split by vocabulary rows over bindings no larger than the
/// device allows: shard `i` holds rows `v0..v0 + n_vocab` (one shard when
/// the whole matrix fits one binding, as on most GPUs).
pub struct GpuShard {
    pub v0: u32,
    pub n_vocab: u32,
    pub matrix: GpuMatrix, // (n_vocab, n_embd) format
}

impl GpuShard {
    /// `m` (vocabulary rows × n_embd) uploaded in shards that each fit one binding.
    fn upload(ctx: &GpuContext, label: &str, m: &Matrix) -> Result<Vec<GpuShard>> {
        let rows = m.shard_rows(ctx.max_binding()).ok_or_else(|| EngineError::DeviceLimit {
            what: format!("{label}: {SHARD_ALIGN} rows in one storage binding"),
            needed: m.format.bytes(SHARD_ALIGN * m.cols),
            allowed: ctx.max_binding(),
        })?;
        let shards = (0..m.rows).step_by(rows).map(|v0| {
            let v1 = (v0 + rows).min(m.rows);
            let label = format!("{label} rows {v0}..{v1}");
            let matrix = match (v0, v1) == (0, m.rows) {
                true => GpuMatrix::upload(ctx, &label, m),
                false => GpuMatrix::upload(ctx, &label, &m.shard(v0, v1)),
            };
            GpuShard { v0: v0 as u32, n_vocab: (v1 - v0) as u32, matrix }
        });
        Ok(shards.collect())
    }
}

/// Activations of one forward pass, sized for [`pass_rows`] rows (a longer
/// prompt is read in several passes).
pub struct Scratch {
    /// The most rows one pass holds: [`pass_rows`] of the model.
    pub rows: usize,
    pub tokens: wgpu::Buffer, // (rows) u32 ids of this pass
    pub x: wgpu::Buffer,      // (rows or more, n_embd) residual stream (make_scratch)
    pub xb: wgpu::Buffer,     // (rows, n_embd) layernorm output
    pub qkv: wgpu::Buffer,    // (rows, n_embd + 2 * kv_dim)
    pub y: wgpu::Buffer,      // (rows, n_embd) attention output
    pub proj: wgpu::Buffer,   // (rows, n_embd) block output before the residual add
    pub fc: wgpu::Buffer, // (rows, n_inner) MLP hidden layer, or (rows, 2 * n_inner) gate, up in turn
    pub act: wgpu::Buffer, // (rows, n_inner) SwiGLU's output (the Llama family; else a placeholder)
    /// Flash-decoding's softmax partials of one query (the gpu profile's attention_split).
    pub parts: wgpu::Buffer, // (chunks of n_positions, n_head, 2 + head_size)
}

/// The model's weights on the device, uploaded once and shared by every
/// kernel profile's pipelines (the profiles are timed on the same upload).
pub struct GpuWeights {
    pub wte: Vec<GpuShard>, // (vocab_size, n_embd) format, in shards
    pub wpe: wgpu::Buffer,  // (n_positions, n_embd), a placeholder for rotary models
    /// Every position's rotary turns (the Llama family; else a placeholder).
    pub turns: wgpu::Buffer, // (n_positions, head_size / 2) cos, sin
    pub layers: Vec<GpuLayer>, // (n_layer)
    pub ln_f: wgpu::Buffer, // (2, n_embd) weight, then bias
    /// `Some` only when untied; else the LM head is `wte`.
    pub lm_head: Option<Vec<GpuShard>>, // (vocab_size, n_embd) format, in shards
}

/// Weights, pipelines and scratch of one model on one device, with the
/// kernels of one [`Profile`]. Shared by its sessions through `Rc`: wgpu
/// objects are not `Send` in the browser, and the engine runs on one thread
/// everywhere.
pub struct GpuModel {
    pub ctx: GpuContext,
    pub model: SharedModel,
    pub pipelines: Pipelines,
    pub weights: Rc<GpuWeights>,
    pub scratch: Rc<Scratch>,
}

impl GpuModel {
    /// As [`new`](Self::new), with the weight matrices stored in `format`
    /// (the model converted first when it is in another format).
    pub async fn with_format(
        ctx: GpuContext,
        model: SharedModel,
        format: Format,
        profile: Profile,
    ) -> Result<Rc<GpuModel>> {
        let model = match model.format() == format {
            true => model,
            false => std::sync::Arc::new(model.to_format(format)?),
        };
        GpuModel::new(ctx, model, profile).await
    }

    /// The same uploaded model with the kernels of `profile` (its pipelines
    /// compiled; weights and scratch shared).
    pub async fn with_profile(&self, profile: Profile) -> Result<Rc<GpuModel>> {
        check_profile(&self.ctx, self.config(), profile)?;
        Ok(Rc::new(GpuModel {
            ctx: self.ctx.clone(),
            model: self.model.clone(),
            pipelines: Pipelines::new(&self.ctx, self.config(), self.format(), profile).await?,
            weights: self.weights.clone(),
            scratch: self.scratch.clone(),
        }))
    }

    /// Checks the model against the device's limits, then uploads it, the
    /// weight matrices in the format the model holds them in, with the
    /// kernels of `profile`.
    pub async fn new(
        ctx: GpuContext,
        model: SharedModel,
        profile: Profile,
    ) -> Result<Rc<GpuModel>> {
        let format = model.format();
        if model.weights.matrices().any(Matrix::cpu_only) {
            return Err(EngineError::Gpu(
                "these weights were laid out for the CPU engine (lifted, in column or row panels, or for its 8-bit activations); load the model again for the GPU"
                    .into(),
            ));
        }
        check_limits(&ctx, &model.config, format)?;
        check_profile(&ctx, &model.config, profile)?;
        let pipelines = Pipelines::new(&ctx, &model.config, format, profile).await?;
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let w = &model.weights;
        let f = |label: &str, v: &[f32]| upload(&ctx, label, bytemuck::cast_slice(v));
        let lm_head = match &w.lm_head {
            Some(head) => Some(GpuShard::upload(&ctx, "the LM head lm_head", head)?),
            None => None,
        };
        let weights = GpuWeights {
            wte: GpuShard::upload(&ctx, "the token embedding wte", &w.wte)?,
            wpe: f("wpe", or_placeholder(&w.wpe)),
            turns: f("turns", or_placeholder(&turns_table(&model.config))),
            layers: w.layers.iter().map(|l| upload_layer(&ctx, l)).collect(),
            ln_f: norm_buffer(&ctx, "ln_f", &w.ln_f_weight, &w.ln_f_bias, &[]),
            lm_head,
        };
        let gpu = GpuModel {
            weights: Rc::new(weights),
            scratch: Rc::new(make_scratch(&ctx, &model.config)),
            pipelines,
            model,
            ctx,
        };
        if let Some(e) = scope.pop().await {
            return Err(EngineError::Gpu(format!(
                "out of GPU memory while uploading the model: {e}"
            )));
        }
        Ok(Rc::new(gpu))
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.model.config
    }

    /// The format the weight matrices are stored in.
    pub fn format(&self) -> Format {
        self.pipelines.format
    }

    /// The kernel profile this model's pipelines are compiled for.
    pub fn profile(&self) -> Profile {
        self.pipelines.profile
    }

    /// Bytes of every weight buffer on the GPU (matrices in the format, the
    /// rest f32): the model's weights as uploaded, not the rotary table made
    /// from its config nor a placeholder bound where it has no position table.
    pub fn weight_bytes(&self) -> u64 {
        let w = &self.weights;
        let placeholder = self.model.weights.wpe.is_empty().then_some(&w.wpe);
        let derived = std::iter::once(&w.turns).chain(placeholder);
        let all: u64 = w.buffers().map(wgpu::Buffer::size).sum();
        all - derived.map(wgpu::Buffer::size).sum::<u64>() - self.bias_copies()
    }

    /// Bytes of the biases an RMSNorm's buffer repeats ([`norm_buffer`]).
    fn bias_copies(&self) -> u64 {
        let copied = |l: &LayerWeights| match l.ln_1_bias.is_empty() {
            true => l.c_attn_bias.len() + l.c_fc_bias.len(),
            false => 0,
        };
        self.model.weights.layers.iter().map(|l| 4 * copied(l) as u64).sum()
    }

    /// The LM head: `lm_head` when untied, else the token embedding.
    pub fn lm_head(&self) -> &[GpuShard] {
        self.weights.lm_head.as_ref().unwrap_or(&self.weights.wte)
    }
}

impl GpuWeights {
    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let fixed = [&self.wpe, &self.turns, &self.ln_f];
        let shards = self.wte.iter().chain(self.lm_head.iter().flatten());
        let matrices = shards.flat_map(|s| s.matrix.buffers());
        let layers = self.layers.iter().flat_map(GpuLayer::buffers);
        fixed.into_iter().chain(matrices).chain(layers)
    }
}

impl GpuLayer {
    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let vectors = [
            &self.ln_1,
            &self.c_attn_bias,
            &self.attn_proj_bias,
            &self.ln_2,
            &self.c_fc_bias,
            &self.mlp_proj_bias,
        ];
        let matrices =
            [&self.c_attn_weight, &self.attn_proj_weight, &self.c_fc_weight, &self.mlp_proj_weight];
        vectors.into_iter().chain(matrices.into_iter().flat_map(GpuMatrix::buffers))
    }
}

impl Scratch {
    fn buffers(&self) -> [&wgpu::Buffer; 9] {
        let s = self;
        [&s.tokens, &s.x, &s.xb, &s.qkv, &s.y, &s.proj, &s.fc, &s.act, &s.parts]
    }
}

/// Frees the weights once the last model using them is gone (after a
/// fall-back to the CPU engine, say), instead of whenever the browser's
/// garbage collector gets to them (see `GpuSession`'s `Drop`).
impl Drop for GpuWeights {
    fn drop(&mut self) {
        self.buffers().for_each(wgpu::Buffer::destroy);
    }
}

/// Frees the scratch likewise.
impl Drop for Scratch {
    fn drop(&mut self) {
        self.buffers().into_iter().for_each(wgpu::Buffer::destroy);
    }
}

fn upload_layer(ctx: &GpuContext, l: &LayerWeights) -> GpuLayer {
    let f = |label: &str, v: &[f32]| upload(ctx, label, bytemuck::cast_slice(v));
    let m = |label: &str, v: &Matrix| GpuMatrix::upload(ctx, label, v);
    GpuLayer {
        ln_1: norm_buffer(ctx, "ln_1", &l.ln_1_weight, &l.ln_1_bias, &l.c_attn_bias),
        c_attn_weight: m("c_attn.weight", &l.c_attn_weight),
        c_attn_bias: f("c_attn.bias", &l.c_attn_bias),
        attn_proj_weight: m("attn.c_proj.weight", &l.attn_proj_weight),
        attn_proj_bias: f("attn.c_proj.bias", &l.attn_proj_bias),
        ln_2: norm_buffer(ctx, "ln_2", &l.ln_2_weight, &l.ln_2_bias, &l.c_fc_bias),
        c_fc_weight: m("c_fc.weight", &l.c_fc_weight),
        c_fc_bias: f("c_fc.bias", &l.c_fc_bias),
        mlp_proj_weight: m("mlp.c_proj.weight", &l.mlp_proj_weight),
        mlp_proj_bias: f("mlp.c_proj.bias", &l.mlp_proj_bias),
    }
}

/// A LayerNorm's `(2, n_embd)` weight, then bias; an RMSNorm's weight, then
/// the bias of the projection after it (`next`): rms_qkv and rms_swiglu read
/// both from one binding (rms_qkv binds WebGPU's 8 storage buffers).
fn norm_buffer(
    ctx: &GpuContext,
    label: &str,
    weight: &[f32],
    bias: &[f32],
    next: &[f32],
) -> wgpu::Buffer {
    let after = if bias.is_empty() { next } else { bias };
    upload(ctx, label, bytemuck::cast_slice(&[weight, after].concat()))
}

/// A buffer a model without the part binds in its place (zero-sized
/// bindings are invalid): one zero.
fn or_placeholder(v: &[f32]) -> &[f32] {
    match v.is_empty() {
        true => &[0.0],
        false => v,
    }
}

/// (n_positions, head_size / 2) every position's rotary turns, cosine then
/// sine, as the CPU engine makes them ([`rope::turns`]); empty without
/// rotary positions.
fn turns_table(c: &Config) -> Vec<f32> {
    let Some(llama) = c.llama() else { return Vec::new() };
    let inv_freq = llama.rope.inv_freq(c.head_size);
    let turns = rope::turns(&inv_freq, 0, c.n_positions);
    turns.into_iter().flat_map(|(cos, sin)| [cos, sin]).collect()
}

/// The most tokens one pass reads: a longer prompt is read in passes of
/// this many, each attending to the cache the earlier ones wrote.
pub const PASS_ROWS: usize = 1024;

/// The rows of `c`'s scratch: a pass's, not a context's. A 32k-context
/// model's MLP activations for its whole context (Qwen2.5-0.5B: 1.27 GB)
/// would exceed one storage binding and the memory of many GPUs; GPT-2's
/// context is one pass.
pub fn pass_rows(c: &Config) -> usize {
    c.n_positions.min(PASS_ROWS)
}

fn make_scratch(ctx: &GpuContext, c: &Config) -> Scratch {
    let rows = pass_rows(c) as u64;
    let f = |label: &str, cols: usize| buffer(ctx, label, rows * cols as u64 * 4, STORAGE);
    let gated = c.llama().is_some(); // SwiGLU: gate | up, then its output
    let fc = if gated { 2 * c.n_inner } else { c.n_inner };
    // A decode step's fused kernels keep a normalised row a workgroup in x.
    let x_rows = rows.max(fused_x_rows(c.qkv_width().max(fc)) as u64);
    Scratch {
        rows: rows as usize,
        tokens: f("tokens", 1),
        x: buffer(ctx, "x", x_rows * c.n_embd as u64 * 4, STORAGE),
        xb: f("xb", c.n_embd),
        qkv: f("qkv", c.qkv_width()),
        y: f("y", c.n_embd),
        proj: f("proj", c.n_embd),
        fc: f("fc", fc),
        act: f("act", if gated { c.n_inner } else { 0 }),
        parts: buffer(ctx, "parts", floats_of_parts(c) * 4, STORAGE),
    }
}

/// Floats of flash-decoding's partials for one query over a whole context.
fn floats_of_parts(c: &Config) -> u64 {
    let per_chunk = c.n_head * attention_split::part_len(c.head_size);
    (attention_split::chunks(c.n_positions.saturating_sub(1)) * per_chunk) as u64
}

/// Fails with a clear message if the device cannot run `profile`'s kernels on a model of `c`.
fn check_profile(ctx: &GpuContext, c: &Config, profile: Profile) -> Result<()> {
    if profile != Profile::Cpu {
        let head_groups = (c.vocab_size as u32).div_ceil(lm_head_split::ROWS);
        ctx.check_groups("the split LM head's vocabulary rows", head_groups)?;
    }
    let wg = profile.kernels().into_iter().map(|k| profile.wg(k)).max().unwrap_or(WG);
    let l = &ctx.limits;
    if l.max_compute_invocations_per_workgroup < wg || l.max_compute_workgroup_size_x < wg {
        return Err(EngineError::DeviceLimit {
            what: format!("invocations per workgroup (the {} kernels)", profile.name()),
            needed: u64::from(wg),
            allowed: u64::from(l.max_compute_invocations_per_workgroup),
        });
    }
    Ok(())
}

/// The shapes the kernels hold in workgroup memory, whatever the device.
fn check_shapes(c: &Config) -> Result<()> {
    if c.head_size > MAX_HEAD_SIZE {
        return Err(EngineError::DeviceLimit {
            what: "head_size (the attention kernel holds one head in workgroup memory)".into(),
            needed: c.head_size as u64,
            allowed: MAX_HEAD_SIZE as u64,
        });
    }
    if c.n_embd > LN_MAX_EMBD {
        return Err(EngineError::DeviceLimit {
            what: "n_embd (the fused decode kernels hold one row in workgroup memory)".into(),
            needed: c.n_embd as u64,
            allowed: LN_MAX_EMBD as u64,
        });
    }
    Ok(())
}

/// Every limit the forward pass can hit, checked before anything is allocated.
fn check_limits(ctx: &GpuContext, c: &Config, format: Format) -> Result<()> {
    check_shapes(c)?;
    let (e, i, p) = (c.n_embd as u64, c.n_inner as u64, c.n_positions as u64);
    let rows = pass_rows(c) as u64;
    let matrix = |rows: u64, cols: u64| format.bytes((rows * cols) as usize);
    // The embedding and LM head are split by rows instead (`GpuShard`).
    // SwiGLU's gate and up projections are one matrix, twice as wide.
    let i = if c.llama().is_some() { 2 * i } else { i };
    if c.llama().is_none() {
        // Rotary models have no position embedding (a placeholder buffer).
        ctx.check_binding("the position embedding wpe", p * e * 4)?;
    }
    ctx.check_binding("the MLP weights c_fc", matrix(e, i))?;
    ctx.check_binding("the MLP activations", rows * i * 4)?;
    ctx.check_binding("the qkv activations", rows * c.qkv_width() as u64 * 4)?;
    ctx.check_groups("one row per workgroup over n_positions", c.n_positions as u32)?;
    Ok(())
}

#[cfg(test)]
mod tests;

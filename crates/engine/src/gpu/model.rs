//! The model on the GPU: weights uploaded once, compiled pipelines, and the
//! activation scratch every session of this model shares (a forward pass is
//! written, submitted and read back within one call, so sessions never overlap
//! in it).

use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::gpu::readback::{buffer, upload, STORAGE};
use crate::gpu::{GpuContext, Pipelines};
use crate::kernels::attention::MAX_HEAD_SIZE;
use crate::kernels::format::Format;
use crate::kernels::matrix::{Matrix, SHARD_ALIGN};
use crate::model::{Config, LayerWeights};
use crate::step::SharedModel;

/// One block's weights as GPU buffers (Conv1D layout, as in [`LayerWeights`]).
/// The four matrices are in the model's weight [`Format`]; the rest f32.
pub struct GpuLayer {
    pub ln_1_weight: wgpu::Buffer,    // (n_embd)
    pub ln_1_bias: wgpu::Buffer,      // (n_embd)
    pub c_attn_weight: GpuMatrix,     // (n_embd, 3 * n_embd) format
    pub c_attn_bias: wgpu::Buffer,    // (3 * n_embd)
    pub attn_proj_weight: GpuMatrix,  // (n_embd, n_embd) format
    pub attn_proj_bias: wgpu::Buffer, // (n_embd)
    pub ln_2_weight: wgpu::Buffer,    // (n_embd)
    pub ln_2_bias: wgpu::Buffer,      // (n_embd)
    pub c_fc_weight: GpuMatrix,       // (n_embd, n_inner) format
    pub c_fc_bias: wgpu::Buffer,      // (n_inner)
    pub mlp_proj_weight: GpuMatrix,   // (n_inner, n_embd) format
    pub mlp_proj_bias: wgpu::Buffer,  // (n_embd)
}

/// A weight matrix on the GPU: its packed words (the kernels' `w` binding)
/// and, in the formats that have them, its scales (binding [`SCALES_BINDING`](crate::kernels::format::SCALES_BINDING)).
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

/// Activations of one forward pass, sized for a full context of `n_positions` rows.
pub struct Scratch {
    pub tokens: wgpu::Buffer, // (n_positions) u32 ids of this pass
    pub x: wgpu::Buffer,      // (n_positions, n_embd) residual stream
    pub xb: wgpu::Buffer,     // (n_positions, n_embd) layernorm output
    pub qkv: wgpu::Buffer,    // (n_positions, 3 * n_embd)
    pub y: wgpu::Buffer,      // (n_positions, n_embd) attention output
    pub proj: wgpu::Buffer,   // (n_positions, n_embd) block output before the residual add
    pub fc: wgpu::Buffer,     // (n_positions, n_inner) MLP hidden layer
}

/// Weights, pipelines and scratch of one model on one device. Shared by its
/// sessions through `Rc`: wgpu objects are not `Send` in the browser, and the
/// engine runs on one thread everywhere.
pub struct GpuModel {
    pub ctx: GpuContext,
    pub model: SharedModel,
    pub pipelines: Pipelines,
    pub wte: Vec<GpuShard>,        // (vocab_size, n_embd) format, in shards
    pub wpe: wgpu::Buffer,         // (n_positions, n_embd)
    pub layers: Vec<GpuLayer>,     // (n_layer)
    pub ln_f_weight: wgpu::Buffer, // (n_embd)
    pub ln_f_bias: wgpu::Buffer,   // (n_embd)
    /// `Some` only when untied; else the LM head is `wte`.
    pub lm_head: Option<Vec<GpuShard>>, // (vocab_size, n_embd) format, in shards
    pub scratch: Scratch,
}

impl GpuModel {
    /// As [`new`](Self::new), with the weight matrices stored in `format`
    /// (the model converted first when it is in another format).
    pub async fn with_format(
        ctx: GpuContext,
        model: SharedModel,
        format: Format,
    ) -> Result<Rc<GpuModel>> {
        let model = match model.format() == format {
            true => model,
            false => std::sync::Arc::new(model.to_format(format)?),
        };
        GpuModel::new(ctx, model).await
    }

    /// Checks the model against the device's limits, then uploads it, the
    /// weight matrices in the format the model holds them in.
    pub async fn new(ctx: GpuContext, model: SharedModel) -> Result<Rc<GpuModel>> {
        let format = model.format();
        check_limits(&ctx, &model.config, format)?;
        let pipelines = Pipelines::new(&ctx, format).await?;
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let w = &model.weights;
        let f = |label: &str, v: &[f32]| upload(&ctx, label, bytemuck::cast_slice(v));
        let lm_head = match &w.lm_head {
            Some(head) => Some(GpuShard::upload(&ctx, "the LM head lm_head", head)?),
            None => None,
        };
        let gpu = GpuModel {
            wte: GpuShard::upload(&ctx, "the token embedding wte", &w.wte)?,
            wpe: f("wpe", &w.wpe),
            layers: w.layers.iter().map(|l| upload_layer(&ctx, l)).collect(),
            ln_f_weight: f("ln_f.weight", &w.ln_f_weight),
            ln_f_bias: f("ln_f.bias", &w.ln_f_bias),
            lm_head,
            scratch: make_scratch(&ctx, &model.config),
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

    /// Bytes of every weight buffer on the GPU (matrices in the format, the rest f32).
    pub fn weight_bytes(&self) -> u64 {
        self.weight_buffers().map(wgpu::Buffer::size).sum()
    }

    /// The LM head: `lm_head` when untied, else the token embedding.
    pub fn lm_head(&self) -> &[GpuShard] {
        self.lm_head.as_ref().unwrap_or(&self.wte)
    }

    fn weight_buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let fixed = [&self.wpe, &self.ln_f_weight, &self.ln_f_bias];
        let shards = self.wte.iter().chain(self.lm_head.iter().flatten());
        let matrices = shards.flat_map(|s| s.matrix.buffers());
        let layers = self.layers.iter().flat_map(GpuLayer::buffers);
        fixed.into_iter().chain(matrices).chain(layers)
    }
}

impl GpuLayer {
    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let vectors = [
            &self.ln_1_weight,
            &self.ln_1_bias,
            &self.c_attn_bias,
            &self.attn_proj_bias,
            &self.ln_2_weight,
            &self.ln_2_bias,
            &self.c_fc_bias,
            &self.mlp_proj_bias,
        ];
        let matrices =
            [&self.c_attn_weight, &self.attn_proj_weight, &self.c_fc_weight, &self.mlp_proj_weight];
        vectors.into_iter().chain(matrices.into_iter().flat_map(GpuMatrix::buffers))
    }
}

impl Scratch {
    fn buffers(&self) -> [&wgpu::Buffer; 7] {
        [&self.tokens, &self.x, &self.xb, &self.qkv, &self.y, &self.proj, &self.fc]
    }
}

/// Frees the weights and scratch once the last session of the model is gone
/// (after a fall-back to the CPU engine, say), instead of whenever the
/// browser's garbage collector gets to them (see `GpuSession`'s `Drop`).
impl Drop for GpuModel {
    fn drop(&mut self) {
        self.weight_buffers().for_each(wgpu::Buffer::destroy);
        self.scratch.buffers().into_iter().for_each(wgpu::Buffer::destroy);
    }
}

fn upload_layer(ctx: &GpuContext, l: &LayerWeights) -> GpuLayer {
    let f = |label: &str, v: &[f32]| upload(ctx, label, bytemuck::cast_slice(v));
    let m = |label: &str, v: &Matrix| GpuMatrix::upload(ctx, label, v);
    GpuLayer {
        ln_1_weight: f("ln_1.weight", &l.ln_1_weight),
        ln_1_bias: f("ln_1.bias", &l.ln_1_bias),
        c_attn_weight: m("c_attn.weight", &l.c_attn_weight),
        c_attn_bias: f("c_attn.bias", &l.c_attn_bias),
        attn_proj_weight: m("attn.c_proj.weight", &l.attn_proj_weight),
        attn_proj_bias: f("attn.c_proj.bias", &l.attn_proj_bias),
        ln_2_weight: f("ln_2.weight", &l.ln_2_weight),
        ln_2_bias: f("ln_2.bias", &l.ln_2_bias),
        c_fc_weight: m("c_fc.weight", &l.c_fc_weight),
        c_fc_bias: f("c_fc.bias", &l.c_fc_bias),
        mlp_proj_weight: m("mlp.c_proj.weight", &l.mlp_proj_weight),
        mlp_proj_bias: f("mlp.c_proj.bias", &l.mlp_proj_bias),
    }
}

fn make_scratch(ctx: &GpuContext, c: &Config) -> Scratch {
    let rows = c.n_positions as u64;
    let f = |label: &str, cols: usize| buffer(ctx, label, rows * cols as u64 * 4, STORAGE);
    Scratch {
        tokens: f("tokens", 1),
        x: f("x", c.n_embd),
        xb: f("xb", c.n_embd),
        qkv: f("qkv", 3 * c.n_embd),
        y: f("y", c.n_embd),
        proj: f("proj", c.n_embd),
        fc: f("fc", c.n_inner),
    }
}

/// Every limit the forward pass can hit, checked before anything is allocated.
fn check_limits(ctx: &GpuContext, c: &Config, format: Format) -> Result<()> {
    if c.head_size > MAX_HEAD_SIZE {
        return Err(EngineError::DeviceLimit {
            what: "head_size (the attention kernel holds one head in workgroup memory)".into(),
            needed: c.head_size as u64,
            allowed: MAX_HEAD_SIZE as u64,
        });
    }
    let (e, i, p) = (c.n_embd as u64, c.n_inner as u64, c.n_positions as u64);
    let matrix = |rows: u64, cols: u64| format.bytes((rows * cols) as usize);
    // The embedding and LM head are split by rows instead (`GpuShard`).
    ctx.check_binding("the position embedding wpe", p * e * 4)?;
    ctx.check_binding("the MLP weights c_fc", matrix(e, i))?;
    ctx.check_binding("the MLP activations", p * i * 4)?;
    ctx.check_binding("the qkv activations", p * 3 * e * 4)?;
    ctx.check_groups("one row per workgroup over n_positions", c.n_positions as u32)?;
    let wg = crate::kernels::WG;
    if ctx.limits.max_compute_invocations_per_workgroup < wg
        || ctx.limits.max_compute_workgroup_size_x < wg
    {
        return Err(EngineError::DeviceLimit {
            what: "invocations per workgroup".into(),
            needed: u64::from(wg),
            allowed: u64::from(ctx.limits.max_compute_invocations_per_workgroup),
        });
    }
    Ok(())
}

//! The compute pipelines of one kernel profile, compiled once per device,
//! weight format and model (the kernels its passes dispatch, [`kernels_for`]).
//! Shader compilation runs inside a validation error scope so a WGSL error
//! becomes an [`EngineError`] naming the kernel instead of a panic. Every `override` a kernel declares is set from the profile
//! ([`Profile::constant`]): the WGSL says which constants there are, Rust
//! says their values.

use std::collections::HashMap;

use crate::error::{EngineError, Result};
use crate::gpu::plan::{self, Layout, PolicyOps};
use crate::gpu::{plan_decode, GpuContext};
use crate::kernels::{matmul_split, Kernel, Profile};
use crate::model::Config;
use crate::storage::format::Format;

/// Compiled pipelines for weights in one format and one profile, looked up by kernel.
pub struct Pipelines {
    pub format: Format,
    pub profile: Profile,
    map: HashMap<Kernel, wgpu::ComputePipeline>,
    /// Wall time of compiling them all (each waits for its validation
    /// scope, so the device's compile is inside): the cold cost a first
    /// step would otherwise pay, paid at load.
    pub compile_ms: f64,
}

impl Pipelines {
    /// Compiles every kernel a model of `config` dispatches in `profile`
    /// ([`kernels_for`]) for this device, reading weights in `format`.
    pub async fn new(
        ctx: &GpuContext,
        config: &Config,
        format: Format,
        profile: Profile,
    ) -> Result<Pipelines> {
        let kernels =
            kernels_for(config, format, profile, ctx.limits.max_storage_buffer_binding_size);
        Pipelines::of(ctx, format, profile, &kernels).await
    }

    /// Compiles `kernels` as `profile` compiles them (the self-test compiles
    /// the kernels that read no weights once, not once per format).
    pub async fn of(
        ctx: &GpuContext,
        format: Format,
        profile: Profile,
        kernels: &[Kernel],
    ) -> Result<Pipelines> {
        Pipelines::compiled(ctx, format, profile, kernels, None).await
    }

    /// `kernel` alone, compiled with the fault hook on (`FAULT = 1`,
    /// shaders/fault.wgsl): every value it stores is off by one, on the
    /// device. The self-test's proof that it catches a wrong kernel.
    pub async fn faulted(
        ctx: &GpuContext,
        format: Format,
        profile: Profile,
        kernel: Kernel,
    ) -> Result<Pipelines> {
        Pipelines::compiled(ctx, format, profile, &[kernel], Some(kernel)).await
    }

    async fn compiled(
        ctx: &GpuContext,
        format: Format,
        profile: Profile,
        kernels: &[Kernel],
        fault: Option<Kernel>,
    ) -> Result<Pipelines> {
        let start = web_time::Instant::now();
        let mut map = HashMap::new();
        for &kernel in kernels {
            let faulted = fault == Some(kernel);
            map.insert(kernel, compile(ctx, kernel, format, profile, faulted).await?);
        }
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(Pipelines { format, profile, map, compile_ms })
    }

    /// The pipeline of `kernel` (one of the profile's: the plans dispatch no other).
    pub fn get(&self, kernel: Kernel) -> &wgpu::ComputePipeline {
        &self.map[&kernel]
    }

    /// Whether the profile compiled `kernel`.
    pub fn has(&self, kernel: Kernel) -> bool {
        self.map.contains_key(&kernel)
    }
}

/// The kernels run outside a pass: greedy decoding's argmax, the device
/// probe's sum and one-element add, the attention lesson's weights.
const OUTSIDE_PASSES: [Kernel; 4] =
    [Kernel::Argmax, Kernel::BlockSum, Kernel::ResidualAdd, Kernel::AttentionProbs];

/// Every kernel a model of `config` in `format` dispatches in `profile`, in
/// the table's order: those of every pass a session may build (prefill,
/// short prefill, decode, each with every cache policy's extra ops; batched
/// steps, split and tiled; the LM head alone), read from the plans
/// themselves, and [`OUTSIDE_PASSES`]. Compiling only these is what keeps a
/// GPT-2 page from compiling the Llama family's kernels (and the other way
/// round): each pipeline is a compile of its own, a quarter of a second on a
/// software GPU.
pub fn kernels_for(
    config: &Config,
    format: Format,
    profile: Profile,
    max_binding: u64,
) -> Vec<Kernel> {
    let layout = Layout::of(config, format, profile, max_binding);
    let policy = PolicyOps { mass: true, renumber: true };
    let mut specs = plan::prefill(&layout, policy).specs;
    specs.extend(plan::short_prefill(&layout, policy).map(|b| b.specs).unwrap_or_default());
    specs.extend(plan_decode::decode(&layout, policy).specs);
    specs.extend(plan::lm_head(&layout));
    for n_seqs in [1, matmul_split::MAX_ROWS + 1] {
        specs.extend(plan::batch(&layout, n_seqs));
    }
    let used: Vec<Kernel> = specs.iter().map(|s| s.dispatch.kernel()).collect();
    profile
        .kernels()
        .into_iter()
        .filter(|k| used.contains(k) || OUTSIDE_PASSES.contains(k))
        .collect()
}

async fn compile(
    ctx: &GpuContext,
    kernel: Kernel,
    format: Format,
    profile: Profile,
    faulted: bool,
) -> Result<wgpu::ComputePipeline> {
    let (k, f) = (kernel.name(), format.name());
    let mut constants = Vec::new();
    for name in kernel.overrides(format) {
        let value =
            if faulted && name == "FAULT" { Some(1.0) } else { profile.constant(kernel, &name) };
        let value = value.ok_or_else(|| {
            EngineError::Gpu(format!(
                "kernel `{k}` declares `override {name}`, which no profile sets"
            ))
        })?;
        constants.push((name, value));
    }
    let constants: Vec<(&str, f64)> = constants.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(kernel.name()),
        source: wgpu::ShaderSource::Wgsl(kernel.source_for(format).into()),
    });
    let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(kernel.name()),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &constants,
            zero_initialize_workgroup_memory: true,
        },
        cache: None,
    });
    match scope.pop().await {
        Some(e) => {
            Err(EngineError::Gpu(format!("kernel `{k}` ({f} weights) failed to compile: {e}")))
        }
        None => Ok(pipeline),
    }
}

//! The compute pipelines of one kernel profile, compiled once per device and
//! weight format. Shader compilation runs inside a validation error scope so
//! a WGSL error becomes an [`EngineError`] naming the kernel instead of a
//! panic. Every `override` a kernel declares is set from the profile
//! ([`Profile::constant`]): the WGSL says which constants there are, Rust
//! says their values.

use std::collections::HashMap;

use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;
use crate::kernels::{Kernel, Profile};
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
    /// Compiles every kernel `profile` uses for this device, reading weights in `format`.
    pub async fn new(ctx: &GpuContext, format: Format, profile: Profile) -> Result<Pipelines> {
        Pipelines::of(ctx, format, profile, &profile.kernels()).await
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

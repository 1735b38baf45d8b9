//! One compute pipeline per kernel, compiled once per device. Shader
//! compilation runs inside a validation error scope so a WGSL error becomes an
//! [`EngineError`] naming the kernel instead of a panic.

use std::collections::HashMap;

use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;
use crate::kernels::{Kernel, WG};
use crate::storage::format::Format;

/// Compiled pipelines for weights in one format, looked up by kernel.
pub struct Pipelines {
    pub format: Format,
    map: HashMap<Kernel, wgpu::ComputePipeline>,
    /// Wall time of compiling them all (each waits for its validation
    /// scope, so the device's compile is inside): the cold cost a first
    /// step would otherwise pay, paid at load.
    pub compile_ms: f64,
}

impl Pipelines {
    /// Compiles every kernel in `shaders/` for this device, reading weights in `format`.
    pub async fn new(ctx: &GpuContext, format: Format) -> Result<Pipelines> {
        let start = web_time::Instant::now();
        let mut map = HashMap::new();
        for kernel in Kernel::ALL {
            map.insert(kernel, compile(ctx, kernel, format).await?);
        }
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(Pipelines { format, map, compile_ms })
    }

    /// The pipeline of `kernel`.
    pub fn get(&self, kernel: Kernel) -> &wgpu::ComputePipeline {
        // Every kernel is inserted by `new`, so the lookup cannot fail.
        &self.map[&kernel]
    }
}

async fn compile(
    ctx: &GpuContext,
    kernel: Kernel,
    format: Format,
) -> Result<wgpu::ComputePipeline> {
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(kernel.name()),
        source: wgpu::ShaderSource::Wgsl(kernel.source_for(format).into()),
    });
    let constants: &[(&str, f64)] =
        if kernel.has_wg_override() { &[("WG", WG as f64)] } else { &[] };
    let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(kernel.name()),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            zero_initialize_workgroup_memory: true,
        },
        cache: None,
    });
    match scope.pop().await {
        Some(e) => {
            let (k, f) = (kernel.name(), format.name());
            Err(EngineError::Gpu(format!("kernel `{k}` ({f} weights) failed to compile: {e}")))
        }
        None => Ok(pipeline),
    }
}

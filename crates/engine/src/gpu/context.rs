//! The wgpu device and queue every GPU object is made on. Tests share one
//! context; the app and CLI make one at start-up.

use std::sync::Arc;

use crate::error::{EngineError, Result};

/// A device and queue plus what the engine needs to know about the adapter.
#[derive(Clone)]
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Adapter name and backend, for headers and bench output.
    pub adapter_info: wgpu::AdapterInfo,
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
}

impl GpuContext {
    /// Finds an adapter (WebGPU in the browser; Vulkan, Metal, DX12 or GL
    /// natively) and opens a device with the adapter's full limits, so models
    /// larger than WebGPU's defaults (128 MiB bindings) fit where the hardware allows.
    pub async fn new() -> Result<GpuContext> {
        GpuContext::within(None).await
    }

    /// [`new`](Self::new) with the device's limits no higher than `cap`
    /// (each limit the stricter of the adapter's and `cap`'s): what a modest
    /// device offers, on any machine. `wgpu::Limits::default()` is the WebGPU
    /// spec's defaults (8 storage buffers per stage, 128 MiB per binding,
    /// 256 MiB per buffer, 16 KiB of workgroup memory), which every WebGPU
    /// browser must offer.
    pub async fn within(cap: Option<wgpu::Limits>) -> Result<GpuContext> {
        // Vulkan/Metal/DX12/WebGPU first; GL only if none of those has an adapter
        // (probing GL first is slow and noisy on headless machines).
        let adapter = match request_adapter(wgpu::Backends::PRIMARY).await {
            Ok(adapter) => adapter,
            Err(_) => request_adapter(wgpu::Backends::SECONDARY).await?,
        };
        let limits = match cap {
            Some(cap) => cap.or_worse_values_from(&adapter.limits()),
            None => adapter.limits(),
        };
        // Timestamps where offered: StepStats then has the steps' GPU time.
        let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("decode-lab"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| EngineError::Gpu(format!("cannot open the GPU device: {e}")))?;
        Ok(GpuContext::from_parts(device, queue, adapter.get_info(), limits))
    }

    /// Wraps a device made elsewhere. Errors the device reports outside an
    /// error scope are logged instead of panicking (wgpu's default handler panics,
    /// and in the browser a panic kills the page).
    pub fn from_parts(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter_info: wgpu::AdapterInfo,
        limits: wgpu::Limits,
    ) -> GpuContext {
        device.on_uncaptured_error(Arc::new(|e| {
            eprintln!("decode-lab: uncaptured GPU error: {e}");
        }));
        GpuContext { device, queue, adapter_info, limits }
    }

    /// Calls `callback` with the reason if the device is lost (driver reset,
    /// GPU removed, tab in the background too long): the caller can fall back
    /// to the CPU engine or recreate the GPU one.
    pub fn on_lost(&self, callback: impl Fn(String) + Send + 'static) {
        self.device.set_device_lost_callback(move |reason, message| {
            callback(format!("{reason:?}: {message}"));
        });
    }

    /// "name (backend)", e.g. "llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)". Browsers
    /// hide the adapter's name by default, so fall back to what they do expose.
    pub fn adapter_name(&self) -> String {
        let info = &self.adapter_info;
        let name = [&info.name, &info.driver_info, &info.driver]
            .into_iter()
            .find(|s| !s.is_empty())
            .map_or("unnamed adapter", |s| s.as_str());
        format!("{name} ({:?})", info.backend)
    }

    /// The largest buffer that can be bound as storage.
    pub fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }

    /// Fails with a clear message if a buffer of `bytes` cannot be bound as storage.
    pub fn check_binding(&self, what: &str, bytes: u64) -> Result<()> {
        let allowed = self.max_binding();
        if bytes > allowed {
            return Err(EngineError::DeviceLimit {
                what: format!("{what} ({bytes} bytes in one storage binding)"),
                needed: bytes,
                allowed,
            });
        }
        Ok(())
    }

    /// Fails with a clear message if a dispatch would need more workgroups than allowed.
    pub fn check_groups(&self, what: &str, groups: u32) -> Result<()> {
        let allowed = self.limits.max_compute_workgroups_per_dimension;
        if groups > allowed {
            return Err(EngineError::DeviceLimit {
                what: format!("{what} (workgroups in one dimension)"),
                needed: u64::from(groups),
                allowed: u64::from(allowed),
            });
        }
        Ok(())
    }
}

/// The first adapter of `backends` (environment variables such as `WGPU_BACKEND` still apply).
async fn request_adapter(backends: wgpu::Backends) -> Result<wgpu::Adapter> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc.with_env());
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        })
        .await
        .map_err(|e| EngineError::NoAdapter(e.to_string()))
}

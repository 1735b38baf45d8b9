//! The GPU engine on wgpu: the same forward pass as the CPU engine, each step
//! a WGSL kernel from `shaders/`, with the KV cache resident in GPU memory.

mod batch;
mod buf;
mod context;
pub mod device_probe;
mod inspect;
mod model;
pub mod ops;
mod pass;
mod pipelines;
pub mod plan;
pub mod plan_decode;
mod probe;
pub mod profile;
pub mod readback;
mod runner;
pub mod selftest;
mod session;
mod session_impl;
mod slots;
pub mod testing;
mod timer;

pub use batch::GpuBatch;
pub use context::GpuContext;
pub use model::{GpuLayer, GpuModel, Scratch, PASS_ROWS};
pub use pipelines::{kernels_for, Pipelines};
pub use session::{GpuSession, KernelTime};

//! Decode Lab's engine: a GPT-2 forward pass in plain Rust (the CPU reference
//! and browser fallback) and in our own WGSL kernels on wgpu (WebGPU in the
//! browser, Vulkan/Metal/DX12 natively), with a KV cache that stays on the GPU.
//!
//! Data flow: [`storage`] (weight formats, packed matrices) → [`model`]
//! (config, weights, tokenizer) → [`kernels`] (one module per shader, with its
//! CPU twin; the CPU engine's fast loops behind the twins in [`fast`]) →
//! [`cpu`] / [`gpu`] (sessions: prefill,
//! decode, rewind, fork) → [`sample`] (the decoding rules, explained stage by stage) → [`generate`]
//! (text in, tokens out, context crop) → [`run`] (one generation: choose, append,
//! step; shared by the CLI and the app).
//! No UI code lives here.

pub mod batch;
pub mod beam;
pub mod cpu;
pub mod engine_session;
pub mod error;
pub mod family;
pub mod fast;
pub mod generate;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod kernels;
pub mod kv_policy;
pub mod kv_slots;
pub mod lessons;
pub mod model;
pub mod open;
pub mod peak;
pub mod remote;
pub mod run;
pub mod run_batch;
pub mod sample;
pub mod serve;
pub mod session;
pub mod speculate;
pub mod step;
pub mod storage;

pub use batch::Batch;
pub use error::{EngineError, Result};
pub use session::Session;
pub use step::{DeviceFigures, Inspection, KvBytes, Look, SharedModel, StepStats, Wanted};

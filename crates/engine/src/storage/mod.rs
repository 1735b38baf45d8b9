//! How weight matrices are stored, below the model and every engine: the
//! formats (f32, f16, bf16, int8 per tensor and per channel, int4; each with
//! its WGSL snippet and CPU twin), a packed [`matrix::Matrix`], f16's bits,
//! the two-weights-a-word [`pair::Pair`] (f16, bf16),
//! and the CPU engine's layouts (column panels; row panels for an f32 LM
//! head; quad panels for 8-bit activations).

pub mod f16_bits;
pub mod format;
mod layouts;
pub mod matrix;
pub mod pair;
pub mod panels;
pub(crate) mod pieces;
pub mod quads;
pub mod row_panels;
mod rows;
pub mod values;

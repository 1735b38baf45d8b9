//! The CPU engine's fast paths behind the twins of `matmul` and `lm_head`:
//! f16 read straight from its words; f32, f16, bf16 and int8 in column
//! panels; an f32 or int8 LM head in row panels; bf16, int8 and int4 decoded in registers (natively in AVX-512 or
//! AVX2 intrinsics, whichever measured faster for the loop; SIMD128 in
//! wasm); a prefill's attention over keys laid out across, a decode step's
//! turned across in registers; threads and the
//! browser's coworker. Each computes
//! exactly the twin's sums in the twin's order, so every path gives the same
//! bits (tests: `cpu_paths.rs`, `tests/shared/f16_paths.rs`, `coworker.rs`).
//! The one path with other numbers is named: `int8_dot`, 8-bit activations.

pub mod attention;
pub mod attention_step;
pub mod coworker;
pub mod exp;
#[cfg(target_arch = "x86_64")]
mod f16c;
#[cfg(any(target_arch = "x86_64", target_arch = "wasm32"))]
mod int4_rows;
pub mod int8_dot;
#[cfg(target_arch = "x86_64")]
mod int8_dot_amx;
#[cfg(target_arch = "x86_64")]
mod int8_dot_avx2;
#[cfg(target_arch = "x86_64")]
mod int8_dot_avx512;
#[cfg(target_arch = "wasm32")]
mod int8_dot_simd128;
mod int8_quantise;
#[cfg(target_arch = "x86_64")]
mod int8_quantise_avx2;
#[cfg(target_arch = "wasm32")]
mod int8_quantise_simd128;
pub mod lm_head;
mod lm_head_rows;
#[cfg(target_arch = "x86_64")]
mod lm_head_wide;
pub mod matmul;
pub mod matmul_panels;
mod matmul_panels_f32;
pub mod matmul_quant;
pub mod parallel;
#[cfg(target_arch = "x86_64")]
mod quant_avx2;
#[cfg(target_arch = "x86_64")]
mod quant_avx512;
#[cfg(target_arch = "wasm32")]
mod quant_simd128;
#[cfg(not(target_arch = "wasm32"))]
mod team;
mod touch;

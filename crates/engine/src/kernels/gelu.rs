//! `shaders/gelu.wgsl`: GPT-2's `gelu_new` activation, in place.

/// Its uniform: the elements it touches (WGSL `Elements`, shaders/grid_1d.wgsl).
pub use super::Elements as Params;

/// x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), clamped as in the shader.
/// tanh from the pure-Rust `libm`, not the platform's (whose last bit differs
/// between native and wasm): the CPU engine's logits are the same bits in both.
pub fn run_cpu(x: &mut [f32]) {
    for v in x.iter_mut() {
        let inner = (0.797_884_6_f32 * (*v + 0.044715 * *v * *v * *v)).clamp(-10.0, 10.0);
        *v = 0.5 * *v * (1.0 + libm::tanhf(inner));
    }
}

super::element_wise! {
    /// One dispatch: GELU in place over `cols` columns of every row.
    arrays: 1
}

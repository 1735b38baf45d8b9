//! `shaders/gelu.wgsl`: GPT-2's `gelu_new` activation, in place.

/// Its uniform: the elements it touches (WGSL `Elements`, shaders/grid_1d.wgsl).
pub use super::Elements as Params;

/// x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), the shader's
/// function, in the equal form x / (1 + e^(−2u)) (0.5 (1 + tanh u) is the
/// logistic of 2u): one [`exp`](crate::fast::exp::exp) in plain f32
/// arithmetic, the same bits natively and in wasm, in a loop the compiler
/// vectorises (a libm `tanhf` call a value does not). No
/// clamp, unlike the shader's tanh: e^(−2u) overflows to +∞ for a large
/// negative x, whose GELU is then −0 as the shader's (1 + tanh u = 0).
pub fn run_cpu(x: &mut [f32]) {
    for v in x.iter_mut() {
        let inner = 0.797_884_6_f32 * (*v + 0.044715 * *v * *v * *v);
        *v /= 1.0 + crate::fast::exp::exp(-2.0 * inner);
    }
}

super::element_wise! {
    /// One dispatch: GELU in place over `cols` columns of every row.
    arrays: 1
}

// gated (a snippet of swiglu, rms_swiglu and rms_swiglu_split): silu(g) · u,
// silu(g) = g / (1 + e^-g), the SwiGLU MLP's activation (Shazeer 2020). CPU
// twin: `swiglu::gated`. For a large negative gate e^-g overflows to inf and
// g / inf is -0: no NaN.
fn gated(g: f32, u: f32) -> f32 {
    return g / (1.0 + exp(-g)) * u;
}

//! `shaders/residual_add.wgsl`: the residual stream takes a block's output.

/// Its uniform: the elements it touches (WGSL `Elements`, shaders/grid_1d.wgsl).
pub use super::Elements as Params;

/// x += y
pub fn run_cpu(
    y: &[f32],     // (n)
    x: &mut [f32], // (n)
) {
    for (xv, yv) in x.iter_mut().zip(y) {
        *xv += yv;
    }
}

super::element_wise! {
    /// One dispatch: x += y over `cols` columns of every row.
    arrays: 2
}

//! `shaders/swiglu.wgsl`: the SwiGLU MLP's activation.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::{grid_1d, At, Cost, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    /// Outputs: n_rows · n_inner.
    pub n: u32,
    pub _pad: [u32; 3],
}

/// out[row, i] = silu(gate[row, i]) · up[row, i], where each row of
/// `gate_up` holds gate and up in turn (`g0, u0, g1, u1, …`, as the model's
/// weights are laid out: `model/weights_llama.rs`): the SwiGLU MLP's activation
/// (Shazeer 2020), silu(x) = x / (1 + e^-x); `exp` from the pure-Rust `libm`
/// (native and wasm the same bits).
pub fn run_cpu(
    gate_up: &[f32], // (n_rows, 2 * n_inner)
    out: &mut [f32], // (n_rows, n_inner)
) {
    for (o, gu) in out[..gate_up.len() / 2].iter_mut().zip(gate_up.chunks_exact(2)) {
        *o = gated(gu[0], gu[1]);
    }
}

/// silu(g) · u, as every kernel that gates forms it (`shaders/gated.wgsl`).
pub fn gated(g: f32, u: f32) -> f32 {
    g / (1.0 + crate::fast::exp::exp(-g)) * u
}

/// One dispatch over every row of the pass, `n_inner` outputs a row.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub n_inner: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n: at.n_rows * self.n_inner, _pad: [0; 3] }
    }

    /// One invocation per output ([`grid_1d`]).
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        grid_1d(p.n as usize)
    }

    /// One round: a gate and an up read, an output written, per invocation.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        Cost::one_round(self.workgroups(p, Format::F32), floats(3 * u64::from(p.n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{close, values};

    #[test]
    fn is_silu_of_gate_times_up_at_awkward_widths() {
        for (rows, i) in [(1, 1), (2, 63), (3, 65), (1, 1757)] {
            let gu = values(rows * 2 * i, 4);
            let mut out = vec![0.0; rows * i];
            run_cpu(&gu, &mut out);
            let want: Vec<f64> = gu
                .chunks(2)
                .map(|gu| {
                    let g = f64::from(gu[0]);
                    g / (1.0 + (-g).exp()) * f64::from(gu[1])
                })
                .collect();
            close(&out, &want, 1e-6);
        }
    }
}

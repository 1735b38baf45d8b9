//! `shaders/gelu.wgsl`: GPT-2's `gelu_new` activation, in place.

use bytemuck::{Pod, Zeroable};

use super::cost::floats;
use super::{At, Cost, Launch};
use crate::storage::format::Format;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), clamped as in the shader.
/// tanh from the pure-Rust `libm`, not the platform's (whose last bit differs
/// between native and wasm): the CPU engine's logits are the same bits in both.
pub fn run_cpu(x: &mut [f32]) {
    for v in x.iter_mut() {
        let inner = (0.797_884_6_f32 * (*v + 0.044715 * *v * *v * *v)).clamp(-10.0, 10.0);
        *v = 0.5 * *v * (1.0 + libm::tanhf(inner));
    }
}

/// One dispatch: GELU in place over `cols` columns of every row.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub cols: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params { n: at.n_rows * self.cols, _pad0: 0, _pad1: 0, _pad2: 0 }
    }

    /// Dispatch size: one thread per element.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        super::grid_1d(p.n as usize)
    }

    /// Element-wise: one round.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let n = u64::from(p.n);
        Cost::one_round(self.workgroups(p, Format::F32), floats(n))
    }
}

//! `shaders/rms_norm.wgsl`: RMSNorm over each row (the Llama family's norm).

use super::cost::{floats, rounds};
use super::layernorm::norm_rounds;
use super::{At, Cost, Launch};
use crate::storage::format::Format;

/// Its uniform: LayerNorm's (rows, width, eps), the WGSL `Params` of both.
pub use super::layernorm::Params;
/// Its dispatch is LayerNorm's too: a workgroup a row.
use super::layernorm::Shape as LayerShape;

/// out[row, :] = x[row, :] / sqrt(mean(x[row, :]²) + eps) · weight (RMSNorm,
/// Zhang & Sennrich 2019, as `LlamaRMSNorm` computes it in f32).
pub fn run_cpu(
    x: &[f32],      // (n_rows, n_embd)
    weight: &[f32], // (n_embd)
    eps: f32,
    out: &mut [f32], // (n_rows, n_embd)
) {
    let n_embd = weight.len();
    for (xr, or) in x.chunks_exact(n_embd).zip(out.chunks_exact_mut(n_embd)) {
        let mean_square = xr.iter().map(|v| v * v).sum::<f32>() / n_embd as f32;
        let rstd = 1.0 / (mean_square + eps).sqrt();
        for c in 0..n_embd {
            or[c] = weight[c] * (xr[c] * rstd);
        }
    }
}

/// One dispatch over every row of the pass.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Invocations per workgroup it is compiled with (the profile's).
    pub wg: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        LayerShape { wg: self.wg }.params(at)
    }

    fn workgroups(&self, p: &Params, format: Format) -> [u32; 3] {
        LayerShape { wg: self.wg }.workgroups(p, format)
    }

    /// One pass over the row (staged on real GPUs, as LayerNorm's weight
    /// and bias are: [`norm_rounds`]) for one reduction, where LayerNorm
    /// needs two; then one round per element scaled.
    fn cost(&self, p: &Params, _: Format) -> Cost {
        let (rows, e) = (u64::from(p.n_rows), u64::from(p.n_embd));
        Cost::plain(
            rows * u64::from(self.wg),
            norm_rounds(e, self.wg) + rounds(e, u64::from(self.wg)),
            floats(2 * rows * e + e),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{close, values};

    #[test]
    fn matches_an_f64_reference_at_awkward_widths() {
        for (rows, e) in [(1, 1), (3, 63), (2, 65), (1, 1757)] {
            let (x, w) = (values(rows * e, 1), values(e, 2));
            let mut out = vec![0.0; rows * e];
            run_cpu(&x, &w, 1e-6, &mut out);
            let want: Vec<f64> = x
                .chunks(e)
                .flat_map(|r| {
                    let ms = r.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / e as f64;
                    let w = &w;
                    r.iter()
                        .zip(w)
                        .map(move |(&v, &g)| f64::from(g) * f64::from(v) / (ms + 1e-6).sqrt())
                })
                .collect();
            close(&out, &want, 1e-5);
        }
    }
}

//! The steps where model families differ, as the CPU engine runs them: the
//! norm (GPT-2's LayerNorm, the Llama family's RMSNorm), rotary positions
//! and the SwiGLU activation (the GPU engine refuses Llama-family models
//! until its kernels have WGSL twins of these). Transcendentals come from
//! the pure-Rust `libm`, not the platform's, so native and wasm logits are
//! the same bits.

use crate::kernels::{layernorm, Heads};
use crate::model::{Config, Family};

/// The family's norm of each row of `x` into `out`: GPT-2's LayerNorm
/// (`bias` its shift), the Llama family's RMSNorm (no shift).
pub fn norm(c: &Config, weight: &[f32], bias: &[f32], x: &[f32], out: &mut [f32]) {
    match c.family {
        Family::Gpt2 => layernorm::run_cpu(x, weight, bias, c.layer_norm_epsilon, out),
        Family::Llama(_) => rms_norm(x, weight, c.layer_norm_epsilon, out),
    }
}

/// out[row, :] = x[row, :] / sqrt(mean(x[row, :]²) + eps) · weight (RMSNorm,
/// Zhang & Sennrich 2019, as `LlamaRMSNorm` computes it in f32).
pub fn rms_norm(
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

/// Each row's turns for rotary positions: row r is at position `pos0 + r`,
/// and pair i turns by the angle `pos · inv_freq[i]`, the f32 product as
/// `transformers` forms it, whose cosine and sine are taken in f64 and
/// rounded. Made once per pass: every block's rotation reads them.
pub fn turns(
    inv_freq: &[f32], // (head_size / 2)
    pos0: usize,
    rows: usize,
) -> Vec<(f32, f32)> {
    // (rows, head_size / 2) cosine, sine
    let angle = |r: usize, f: f32| f64::from((pos0 + r) as f32 * f);
    let turn = |a: f64| (libm::cos(a) as f32, libm::sin(a) as f32);
    (0..rows).flat_map(|r| inv_freq.iter().map(move |&f| turn(angle(r, f)))).collect()
}

/// Rotates each query and key head of `qkv`'s rows by its row's `turns`
/// (RoPE in "rotate half" form: dimension i pairs with i + head_size / 2).
pub fn rope(
    qkv: &mut [f32], // (n_rows, 3 * n_embd): q | k | v, v untouched
    heads: Heads,
    turns: &[(f32, f32)], // (n_rows, head_size / 2) from [`turns`]
) {
    let (e, hs) = (heads.n_embd, heads.head_size);
    let half = hs / 2;
    for (row, turn) in qkv.chunks_exact_mut(3 * e).zip(turns.chunks_exact(half)) {
        for head in row[..2 * e].chunks_exact_mut(hs) {
            let (lo, hi) = head.split_at_mut(half);
            for ((a, b), &(cos, sin)) in lo.iter_mut().zip(hi).zip(turn) {
                let (x, y) = (*a, *b);
                *a = x * cos + -y * sin;
                *b = y * cos + x * sin;
            }
        }
    }
}

/// out[row, i] = silu(gate[row, i]) · up[row, i], where each row of
/// `gate_up` is `gate | up` (n_inner each): the SwiGLU MLP's activation
/// (Shazeer 2020), silu(x) = x / (1 + e^-x).
pub fn swiglu(
    gate_up: &[f32], // (n_rows, 2 * n_inner)
    n_inner: usize,
    out: &mut [f32], // (n_rows, n_inner)
) {
    for (gu, or) in gate_up.chunks_exact(2 * n_inner).zip(out.chunks_exact_mut(n_inner)) {
        let (gate, up) = gu.split_at(n_inner);
        for ((o, &g), &u) in or.iter_mut().zip(gate).zip(up) {
            *o = g / (1.0 + libm::expf(-g)) * u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values in about ±2 from a fixed sequence (no RNG needed).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32) * 4.0 - 2.0
            })
            .collect()
    }

    fn close(got: &[f32], want: &[f64], tol: f64) {
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!((f64::from(g) - w).abs() <= tol * (1.0 + w.abs()), "at {i}: {g} vs {w}");
        }
    }

    #[test]
    fn rms_norm_matches_an_f64_reference_at_awkward_widths() {
        for (rows, e) in [(1, 1), (3, 63), (2, 65), (1, 1757)] {
            let (x, w) = (values(rows * e, 1), values(e, 2));
            let mut out = vec![0.0; rows * e];
            rms_norm(&x, &w, 1e-6, &mut out);
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

    #[test]
    fn rope_turns_each_pair_by_its_angle_and_leaves_v() {
        for (n_head, hs, rows, pos0) in [(1, 2, 1, 0), (3, 8, 5, 61), (2, 64, 2, 1757)] {
            let heads = Heads::each(n_head * hs, hs);
            let e = heads.n_embd;
            let inv: Vec<f32> =
                (0..hs / 2).map(|i| 10_000f32.powf(-2.0 * i as f32 / hs as f32)).collect();
            let x = values(rows * 3 * e, 3);
            let mut got = x.clone();
            rope(&mut got, heads, &turns(&inv, pos0, rows));
            let mut want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            for r in 0..rows {
                for h in 0..2 * n_head {
                    for (i, &f) in inv.iter().enumerate() {
                        let a = f64::from((pos0 + r) as f32 * f);
                        let (j, k) = (r * 3 * e + h * hs + i, r * 3 * e + h * hs + i + hs / 2);
                        let (u, v) = (f64::from(x[j]), f64::from(x[k]));
                        want[j] = u * a.cos() - v * a.sin();
                        want[k] = v * a.cos() + u * a.sin();
                    }
                }
            }
            close(&got, &want, 1e-6);
            // A rotation keeps each pair's length; v is not touched.
            assert_eq!(got[2 * e..3 * e], x[2 * e..3 * e]);
        }
    }

    #[test]
    fn swiglu_is_silu_of_gate_times_up_at_awkward_widths() {
        for (rows, i) in [(1, 1), (2, 63), (3, 65), (1, 1757)] {
            let gu = values(rows * 2 * i, 4);
            let mut out = vec![0.0; rows * i];
            swiglu(&gu, i, &mut out);
            let want: Vec<f64> = gu
                .chunks(2 * i)
                .flat_map(|r| {
                    let (g, u) = r.split_at(i);
                    g.iter().zip(u).map(|(&g, &u)| {
                        let g = f64::from(g);
                        g / (1.0 + (-g).exp()) * f64::from(u)
                    })
                })
                .collect();
            close(&out, &want, 1e-6);
        }
    }
}

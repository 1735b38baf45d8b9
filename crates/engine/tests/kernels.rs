//! Every WGSL kernel against its CPU twin on seeded random inputs at awkward
//! sizes (1, 63, 64, 65, 1757, odd model dims). Outputs start as NaN so an
//! unwritten element fails. Tolerances, per op:
//! - embedding, kv_write, residual_add: exact (copies and a single f32 add are
//!   correctly rounded on both sides);
//! - gelu: 1e-6 abs + 1e-5 rel (the driver's tanh is not the CPU's);
//! - layernorm: 1e-5 abs + 1e-5 rel (tree vs sequential reductions);
//! - matmul, matvec, lm_head: K·ε abs + 1e-5 rel for inputs in [-1, 1]:
//!   the worst-case rounding gap between two summation orders of K products;
//! - attention: 1e-5 abs + 1e-4 rel (online vs two-pass softmax).
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use common::{assert_close, bytes, gpu, poisoned, random};
use decode_lab_engine::gpu::testing::run_kernel;
use decode_lab_engine::kernels::*;

const SIZES: [usize; 5] = [1, 63, 64, 65, 1757];

fn run(
    kernel: Kernel,
    params: &[u8],
    buffers: &[&[u8]],
    groups: [u32; 3],
) -> Option<Vec<Vec<f32>>> {
    let (ctx, pipelines) = gpu()?;
    Some(
        pollster::block_on(run_kernel(ctx, pipelines, kernel, params, buffers, groups))
            .expect("kernel runs"),
    )
}

fn dot_atol(k: usize) -> f32 {
    k as f32 * f32::EPSILON
}

#[test]
fn embedding_matches_twin() {
    for (i, &n_embd) in [1, 63, 65, 48].iter().enumerate() {
        let (vocab, n_positions, n_rows, pos0) = (1757, 70, 5 + i, 3);
        let tokens: Vec<u32> = (0..n_rows).map(|r| ((r * 389 + 7) % vocab) as u32).collect();
        let wte = random(vocab * n_embd, 1);
        let wpe = random(n_positions * n_embd, 2);
        let mut want = poisoned(n_rows * n_embd);
        embedding::run_cpu(&tokens, &wte, &wpe, pos0, n_embd, &mut want);
        let p = embedding::Params {
            n_rows: n_rows as u32,
            n_embd: n_embd as u32,
            pos0: pos0 as u32,
            _pad: 0,
        };
        let x = poisoned(n_rows * n_embd);
        let Some(out) = run(
            Kernel::Embedding,
            bytemuck::bytes_of(&p),
            &[bytemuck::cast_slice(&tokens), bytes(&wte), bytes(&wpe), bytes(&x)],
            embedding::workgroups(&p),
        ) else {
            return;
        };
        assert_close(&format!("embedding n_embd {n_embd}"), &out[3], &want, 0.0, 0.0);
    }
}

#[test]
fn layernorm_matches_twin() {
    for &n_embd in &SIZES {
        for n_rows in [1, 7] {
            // Offset inputs: a non-zero mean is what the two-pass variance is for.
            let x: Vec<f32> = random(n_rows * n_embd, 3).iter().map(|v| v * 3.0 + 0.5).collect();
            let (w, b) = (random(n_embd, 4), random(n_embd, 5));
            let mut want = poisoned(n_rows * n_embd);
            layernorm::run_cpu(&x, &w, &b, 1e-5, &mut want);
            let p = layernorm::Params {
                n_rows: n_rows as u32,
                n_embd: n_embd as u32,
                eps: 1e-5,
                _pad: 0,
            };
            let out0 = poisoned(n_rows * n_embd);
            let Some(out) = run(
                Kernel::Layernorm,
                bytemuck::bytes_of(&p),
                &[bytes(&x), bytes(&w), bytes(&b), bytes(&out0)],
                layernorm::workgroups(&p),
            ) else {
                return;
            };
            assert_close(&format!("layernorm {n_rows}x{n_embd}"), &out[3], &want, 1e-5, 1e-5);
        }
    }
}

#[test]
fn matmul_matches_twin() {
    let shapes =
        [(1, 1, 1), (1, 63, 65), (17, 1757, 65), (65, 64, 63), (33, 65, 1757), (64, 48, 144)];
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        let (x, w, b) = (random(m * k, 10 + i as u64), random(k * n, 20 + i as u64), random(n, 30));
        let mut want = poisoned(m * n);
        matmul::run_cpu(&x, &w, &b, &mut want);
        let p = matmul::Params { m: m as u32, k: k as u32, n: n as u32, _pad: 0 };
        let out0 = poisoned(m * n);
        let Some(out) = run(
            Kernel::Matmul,
            bytemuck::bytes_of(&p),
            &[bytes(&x), bytes(&w), bytes(&b), bytes(&out0)],
            matmul::workgroups(&p),
        ) else {
            return;
        };
        assert_close(&format!("matmul {m}x{k}x{n}"), &out[3], &want, dot_atol(k), 1e-5);
    }
}

#[test]
fn matvec_matches_twin() {
    let shapes = [(1, 1), (63, 65), (1757, 64), (64, 1757), (65, 63), (48, 144)];
    for (i, &(k, n)) in shapes.iter().enumerate() {
        let (x, w, b) = (random(k, 40 + i as u64), random(k * n, 50 + i as u64), random(n, 60));
        let mut want = poisoned(n);
        matvec::run_cpu(&x, &w, &b, &mut want);
        let p = matvec::Params { k: k as u32, n: n as u32, _pad0: 0, _pad1: 0 };
        let out0 = poisoned(n);
        let Some(out) = run(
            Kernel::Matvec,
            bytemuck::bytes_of(&p),
            &[bytes(&x), bytes(&w), bytes(&b), bytes(&out0)],
            matvec::workgroups(&p),
        ) else {
            return;
        };
        assert_close(&format!("matvec {k}x{n}"), &out[3], &want, dot_atol(k), 1e-5);
    }
}

#[test]
fn gelu_matches_twin() {
    for &n in &SIZES {
        // Spread over [-8, 8]: both tails and the curved middle.
        let x: Vec<f32> = random(n, 70).iter().map(|v| v * 8.0).collect();
        let mut want = x.clone();
        gelu::run_cpu(&mut want);
        let p = gelu::Params { n: n as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
        let Some(out) =
            run(Kernel::Gelu, bytemuck::bytes_of(&p), &[bytes(&x)], gelu::workgroups(&p))
        else {
            return;
        };
        assert_close(&format!("gelu {n}"), &out[0], &want, 1e-6, 1e-5);
    }
}

#[test]
fn gelu_stays_finite_for_huge_inputs() {
    let x = [1e4f32, -1e4, 80.0, -80.0, 0.0];
    let p = gelu::Params { n: x.len() as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
    let Some(out) = run(Kernel::Gelu, bytemuck::bytes_of(&p), &[bytes(&x)], gelu::workgroups(&p))
    else {
        return;
    };
    assert_close("gelu extremes", &out[0], &[1e4, 0.0, 80.0, 0.0, 0.0], 1e-6, 1e-6);
}

#[test]
fn residual_add_matches_twin() {
    for &n in &SIZES {
        let (y, x) = (random(n, 80), random(n, 81));
        let mut want = x.clone();
        residual_add::run_cpu(&y, &mut want);
        let p = residual_add::Params { n: n as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
        let Some(out) = run(
            Kernel::ResidualAdd,
            bytemuck::bytes_of(&p),
            &[bytes(&y), bytes(&x)],
            residual_add::workgroups(&p),
        ) else {
            return;
        };
        assert_close(&format!("residual_add {n}"), &out[1], &want, 0.0, 0.0);
    }
}

#[test]
fn kv_write_matches_twin() {
    for &(n_rows, n_embd, pos0) in &[(1, 1, 0), (5, 63, 2), (17, 65, 40), (3, 1757, 1)] {
        let n_positions = 64;
        let qkv = random(n_rows * 3 * n_embd, 90);
        // Rows outside [pos0, pos0 + n_rows) must survive untouched.
        let (mut kc, mut vc) = (random(n_positions * n_embd, 91), random(n_positions * n_embd, 92));
        let (k0, v0) = (kc.clone(), vc.clone());
        kv_write::run_cpu(&qkv, n_embd, pos0, &mut kc, &mut vc);
        let p = kv_write::Params {
            n_rows: n_rows as u32,
            n_embd: n_embd as u32,
            pos0: pos0 as u32,
            _pad: 0,
        };
        let Some(out) = run(
            Kernel::KvWrite,
            bytemuck::bytes_of(&p),
            &[bytes(&qkv), bytes(&k0), bytes(&v0)],
            kv_write::workgroups(&p),
        ) else {
            return;
        };
        assert_close("kv_write keys", &out[1], &kc, 0.0, 0.0);
        assert_close("kv_write values", &out[2], &vc, 0.0, 0.0);
    }
}

#[test]
fn attention_matches_twin() {
    // (n_rows, n_head, head_size, pos0): single key, one tile, tile edges, three tiles,
    // head sizes of 1, 63, 65 (two dims per thread) and the maximum 256.
    let cases = [
        (1, 1, 1, 0),
        (1, 3, 16, 62),
        (2, 2, 63, 63),
        (17, 1, 65, 0),
        (1, 2, 64, 129),
        (9, 3, 7, 57),
        (3, 1, 256, 61),
    ];
    for (i, &(n_rows, n_head, hs, pos0)) in cases.iter().enumerate() {
        let n_embd = n_head * hs;
        let n_positions = pos0 + n_rows + 3;
        let qkv: Vec<f32> =
            random(n_rows * 3 * n_embd, 100 + i as u64).iter().map(|v| v * 2.0).collect();
        let mut kc: Vec<f32> =
            random(n_positions * n_embd, 110 + i as u64).iter().map(|v| v * 2.0).collect();
        let mut vc = random(n_positions * n_embd, 120 + i as u64);
        // The pass's own k and v go in first, as in the forward pass.
        kv_write::run_cpu(&qkv, n_embd, pos0, &mut kc, &mut vc);
        let scale = 1.0 / (hs as f32).sqrt();
        let mut want = poisoned(n_rows * n_embd);
        attention::run_cpu(&qkv, &kc, &vc, n_embd, hs, pos0, scale, &mut want);
        let p = attention::Params {
            n_rows: n_rows as u32,
            pos0: pos0 as u32,
            n_embd: n_embd as u32,
            head_size: hs as u32,
            scale,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let y0 = poisoned(n_rows * n_embd);
        let Some(out) = run(
            Kernel::Attention,
            bytemuck::bytes_of(&p),
            &[bytes(&qkv), bytes(&kc), bytes(&vc), bytes(&y0)],
            attention::workgroups(&p),
        ) else {
            return;
        };
        assert_close(
            &format!("attention rows {n_rows} heads {n_head}x{hs} pos0 {pos0}"),
            &out[3],
            &want,
            1e-5,
            1e-4,
        );
    }
}

#[test]
fn lm_head_matches_twin() {
    for &(vocab, n_embd, n_rows, row0, n_out) in &[
        (1, 1, 1, 0, 1),
        (63, 65, 4, 3, 1),
        (1757, 48, 17, 0, 17),
        (65, 1757, 2, 1, 1),
        (64, 63, 5, 2, 3),
    ] {
        let (x, w) = (random(n_rows * n_embd, 130), random(vocab * n_embd, 131));
        let mut want = poisoned(n_out * vocab);
        lm_head::run_cpu(&x, &w, row0, n_out, n_embd, &mut want);
        let p = lm_head::Params {
            n_out: n_out as u32,
            row0: row0 as u32,
            n_embd: n_embd as u32,
            vocab_size: vocab as u32,
        };
        let l0 = poisoned(n_out * vocab);
        let Some(out) = run(
            Kernel::LmHead,
            bytemuck::bytes_of(&p),
            &[bytes(&x), bytes(&w), bytes(&l0)],
            lm_head::workgroups(&p),
        ) else {
            return;
        };
        assert_close(
            &format!("lm_head vocab {vocab} n_embd {n_embd}"),
            &out[2],
            &want,
            dot_atol(n_embd),
            1e-5,
        );
    }
}

#[test]
fn grid_folds_large_counts_into_two_dimensions() {
    assert_eq!(grid_1d(1), [1, 1, 1]);
    assert_eq!(grid_1d(64 * 65_535), [65_535, 1, 1]);
    let [x, y, _] = grid_1d(64 * 65_535 + 1);
    assert!(x <= MAX_GROUPS_PER_DIM && y == 2 && (x * y) as usize * 64 > 64 * 65_535);
}

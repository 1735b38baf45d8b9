//! Every WGSL kernel against its CPU twin: the case table of
//! `gpu::selftest::cases` (awkward sizes 1, 63, 64, 65, 1757 and odd model
//! dims; the tolerance of each op is stated there), run on this machine's
//! adapter (lavapipe in CI). The page's `?selftest=1` runs the same table on a
//! visitor's adapter.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use common::{assert_close, bytes, gpu};
use decode_lab_engine::gpu::selftest::{self, cases};
use decode_lab_engine::gpu::testing::run_kernel;
use decode_lab_engine::gpu::Pipelines;
use decode_lab_engine::kernels::format::Format;
use decode_lab_engine::kernels::*;

/// Runs every case of `kernel` and fails on the first element out of tolerance.
fn check(kernel: Kernel) {
    let Some((ctx, _)) = gpu() else { return };
    let all = cases::cases(kernel);
    assert!(!all.is_empty());
    let mut compiled = Vec::new();
    for format in Format::ALL {
        compiled.push(pollster::block_on(Pipelines::new(ctx, format)).expect("compiles"));
    }
    for case in &all {
        let pipelines = compiled.iter().find(|p| p.format == case.format).unwrap();
        let buffers: Vec<&[u8]> = case.buffers.iter().map(Vec::as_slice).collect();
        let out = pollster::block_on(run_kernel(
            ctx,
            pipelines,
            kernel,
            &case.params,
            &buffers,
            case.groups,
        ))
        .expect("kernel runs");
        for (index, name, want) in &case.want {
            let what = format!("{} {} {} {name}", kernel.name(), case.format.name(), case.shape);
            let t = case.tolerance;
            assert_close(&what, &out[*index][..want.len()], want, t.atol, t.rtol);
        }
    }
}

#[test]
fn embedding_matches_twin() {
    check(Kernel::Embedding);
}

#[test]
fn layernorm_matches_twin() {
    check(Kernel::Layernorm);
}

#[test]
fn matmul_matches_twin() {
    check(Kernel::Matmul);
}

#[test]
fn matvec_matches_twin() {
    check(Kernel::Matvec);
}

#[test]
fn kv_write_matches_twin() {
    check(Kernel::KvWrite);
}

#[test]
fn attention_matches_twin() {
    check(Kernel::Attention);
}

#[test]
fn residual_add_matches_twin() {
    check(Kernel::ResidualAdd);
}

#[test]
fn gelu_matches_twin() {
    check(Kernel::Gelu);
}

#[test]
fn lm_head_matches_twin() {
    check(Kernel::LmHead);
}

#[test]
fn every_kernel_has_cases() {
    for kernel in Kernel::ALL {
        assert!(cases::cases(kernel).len() >= 4, "{}: too few cases", kernel.name());
        assert_eq!(Kernel::from_name(kernel.name()), Some(kernel));
    }
}

#[test]
fn gelu_stays_finite_for_huge_inputs() {
    let x = [1e4f32, -1e4, 80.0, -80.0, 0.0];
    let p = gelu::Params { n: x.len() as u32, _pad0: 0, _pad1: 0, _pad2: 0 };
    let Some((ctx, pipelines)) = gpu() else { return };
    let out = pollster::block_on(run_kernel(
        ctx,
        pipelines,
        Kernel::Gelu,
        bytemuck::bytes_of(&p),
        &[bytes(&x)],
        gelu::workgroups(&p),
    ))
    .expect("kernel runs");
    assert_close("gelu extremes", &out[0], &[1e4, 0.0, 80.0, 0.0, 0.0], 1e-6, 1e-6);
}

/// The self-test's own verdicts: all pass here, and a corrupted kernel
/// (the page's `selftest_fault=` hook) fails with a reason naming it.
#[test]
fn self_test_passes_and_catches_a_wrong_kernel() {
    let Some((ctx, _)) = gpu() else { return };
    let results = pollster::block_on(selftest::check_kernels(ctx, None));
    let cases: usize = Kernel::ALL.iter().map(|&k| cases::cases(k).len()).sum();
    assert_eq!(results.len(), cases);
    for r in &results {
        assert!(r.passed(), "{} {}: {:?}", r.kernel.name(), r.shape, r);
        assert!(r.worst_ratio.is_finite() && r.max_abs.is_finite());
    }
    let faulty = pollster::block_on(selftest::check_kernels(ctx, Some(Kernel::Matvec)));
    let failed: Vec<_> = faulty.iter().filter(|r| !r.passed()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].kernel, Kernel::Matvec);
    assert!(failed[0].detail.as_deref().unwrap().contains("GPU"), "{:?}", failed[0].detail);
}

#[test]
fn grid_folds_large_counts_into_two_dimensions() {
    assert_eq!(grid_1d(1), [1, 1, 1]);
    assert_eq!(grid_1d(64 * 65_535), [65_535, 1, 1]);
    let [x, y, _] = grid_1d(64 * 65_535 + 1);
    assert!(x <= MAX_GROUPS_PER_DIM && y == 2 && (x * y) as usize * 64 > 64 * 65_535);
}

/// The f16 packing and its CPU twin: two per word, low half first, an odd
/// count padded; values already f16 unchanged, others rounded to nearest even.
#[test]
fn f16_format_packs_two_per_word_and_rounds_to_nearest() {
    let w = [1.0f32, -2.5, 0.1, 65504.0, 3.0];
    let packed = Format::F16.pack(&w);
    assert_eq!(packed.len(), 12); // 5 halves in 3 words
    assert_eq!(Format::F16.bytes(5), 12);
    let words: Vec<u32> = bytemuck::pod_collect_to_vec(&packed);
    assert_eq!(words[0] & 0xffff, 0x3c00); // 1.0
    assert_eq!(words[0] >> 16, 0xc100); // -2.5
    assert_eq!(words[2] >> 16, 0); // the padding half
    let back = Format::F16.round(&w);
    assert_eq!(back[..2], [1.0, -2.5]);
    assert_eq!(back[2], half::f16::from_f32(0.1).to_f32());
    assert_eq!(Format::F32.round(&w), w);
    assert_eq!(Format::from_name("f16"), Some(Format::F16));
    assert!(Format::F16.holds(-2.5) && !Format::F16.holds(0.1) && Format::F32.holds(0.1));
}

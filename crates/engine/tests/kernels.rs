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
use decode_lab_engine::gpu::GpuContext;
use decode_lab_engine::gpu::Pipelines;
use decode_lab_engine::kernels::*;
use decode_lab_engine::storage::format::Format;

/// The profiles whose plans dispatch `kernel`.
fn profiles_of(kernel: Kernel) -> Vec<Profile> {
    let both = [Profile::Cpu, Profile::Gpu(Split::DEFAULT)];
    both.into_iter().filter(|p| p.kernels().contains(&kernel)).collect()
}

/// Every case of `kernel`, in each split layout where its workgroups follow one.
fn all_cases(kernel: Kernel) -> Vec<cases::Case> {
    let layouts = match kernel.takes_layout() {
        true => Split::ALL.to_vec(),
        false => vec![Split::DEFAULT],
    };
    layouts.into_iter().flat_map(|split| cases::cases(kernel, split)).collect()
}

/// Runs every case of `kernel` (compiled as each profile that runs it
/// compiles it) and fails on the first element out of tolerance.
fn check(kernel: Kernel) {
    let Some((ctx, _)) = gpu() else { return };
    let all = all_cases(kernel);
    assert!(!all.is_empty());
    for profile in profiles_of(kernel) {
        check_in(ctx, kernel, profile, &all);
    }
}

fn check_in(ctx: &GpuContext, kernel: Kernel, profile: Profile, all: &[cases::Case]) {
    let mut compiled = Vec::new();
    for format in Format::ALL {
        let pipelines = pollster::block_on(Pipelines::of(ctx, format, profile, &profile.kernels()));
        compiled.push(pipelines.expect("compiles"));
    }
    for case in all {
        let pipelines = compiled.iter().find(|p| p.format == case.format).unwrap();
        run_case(ctx, pipelines, kernel, profile, case);
    }
}

/// Runs one case of `kernel` on `pipelines` (compiled as `profile` compiles
/// it) and fails on the first element out of tolerance.
fn run_case(
    ctx: &GpuContext,
    pipelines: &Pipelines,
    kernel: Kernel,
    profile: Profile,
    case: &cases::Case,
) {
    let buffers: Vec<&[u8]> = case.buffers.iter().map(Vec::as_slice).collect();
    let out = pollster::block_on(run_kernel(
        ctx,
        pipelines,
        kernel,
        &case.params,
        &buffers,
        case.scales.as_deref(),
        case.groups,
    ))
    .expect("kernel runs");
    for (index, name, want) in &case.want {
        let what = format!(
            "{} {} {} {name} ({})",
            kernel.name(),
            case.format.name(),
            case.shape,
            profile.name()
        );
        let t = case.tolerance;
        assert_close(&what, &out[*index][..want.len()], want, t.atol, t.rtol);
    }
}

/// Without an adapter the GPU tests fail rather than pass having checked
/// nothing (run in a child process that sees no adapter).
#[test]
fn the_gpu_tests_fail_without_an_adapter() {
    let (passed, text) = common::run_without_adapter("embedding_matches_twin");
    assert!(!passed, "a GPU test passed without an adapter:\n{text}");
    assert!(text.contains("no GPU adapter, so the GPU tests cannot run"), "{text}");
}

/// Every kernel of both profiles compiles and matches its twin on a device
/// opened with WebGPU's default limits (8 storage buffers per stage, 128 MiB
/// per binding, 256 MiB per buffer, 16 KiB of workgroup memory, 256
/// invocations), what every WebGPU browser offers: one case per kernel,
/// profile and weight format (the limits bite when a pipeline is made).
#[test]
fn every_kernel_runs_within_webgpu_default_limits() {
    let Some(_) = gpu() else { return };
    let modest = pollster::block_on(GpuContext::within(Some(wgpu::Limits::default())));
    let ctx = modest.expect("a device within the default limits");
    assert_eq!(ctx.limits.max_storage_buffers_per_shader_stage, 8);
    assert_eq!(ctx.limits.max_compute_workgroup_storage_size, 16 << 10);
    for profile in [Profile::Cpu, Profile::Gpu(Split::DEFAULT)] {
        for format in Format::ALL {
            let pipelines =
                pollster::block_on(Pipelines::of(&ctx, format, profile, &profile.kernels()));
            let pipelines = pipelines.expect("compiles within the default limits");
            for kernel in profile.kernels() {
                let case = all_cases(kernel).into_iter().find(|c| c.format == format);
                let Some(case) = case else { continue };
                run_case(&ctx, &pipelines, kernel, profile, &case);
            }
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
fn ln_qkv_matches_twin() {
    check(Kernel::LnQkv);
}

#[test]
fn matvec_residual_matches_twin() {
    check(Kernel::MatvecResidual);
}

#[test]
fn ln_fc_gelu_matches_twin() {
    check(Kernel::LnFcGelu);
}

#[test]
fn kv_write_matches_twin() {
    check(Kernel::KvWrite);
}

#[test]
fn kv_mass_matches_twin() {
    check(Kernel::KvMass);
}

#[test]
fn attention_matches_twin() {
    check(Kernel::Attention);
}

#[test]
fn attention_probs_matches_twin() {
    check(Kernel::AttentionProbs);
}

/// What a view relies on, on the GPU's own output: every row of every head
/// sums to 1 (± 1e-5) and gives exactly 0 to the keys after its query.
#[test]
fn attention_probs_rows_sum_to_one_and_never_look_ahead() {
    let Some((ctx, pipelines)) = gpu() else { return };
    for case in cases::cases(Kernel::AttentionProbs, Split::DEFAULT) {
        let p: attention_probs::Params = *bytemuck::from_bytes(&case.params);
        let buffers: Vec<&[u8]> = case.buffers.iter().map(Vec::as_slice).collect();
        let out = pollster::block_on(run_kernel(
            ctx,
            pipelines,
            Kernel::AttentionProbs,
            &case.params,
            &buffers,
            None,
            case.groups,
        ))
        .expect("kernel runs");
        let (n_rows, keys0) = (p.n_rows as usize, p.keys0 as usize);
        let n_cols = keys0 + n_rows;
        for (r, row) in out[2].chunks_exact(n_cols).enumerate() {
            let query = keys0 + r % n_rows;
            let sum: f32 = row[..=query].iter().sum();
            assert!((sum - 1.0).abs() <= 1e-5, "{}: row {r} sums to {sum}", case.shape);
            assert!(
                row[query + 1..].iter().all(|&v| v == 0.0),
                "{}: row {r} looks ahead",
                case.shape
            );
            assert!(row[..=query].iter().all(|&v| (0.0..=1.0).contains(&v)), "{}", case.shape);
        }
    }
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
fn rms_norm_matches_twin() {
    check(Kernel::RmsNorm);
}

#[test]
fn rope_matches_twin() {
    check(Kernel::Rope);
}

#[test]
fn swiglu_matches_twin() {
    check(Kernel::Swiglu);
}

#[test]
fn rms_qkv_matches_twin() {
    check(Kernel::RmsQkv);
}

#[test]
fn rms_swiglu_matches_twin() {
    check(Kernel::RmsSwiglu);
}

#[test]
fn lm_head_matches_twin() {
    check(Kernel::LmHead);
}

#[test]
fn every_kernel_has_cases() {
    for &kernel in Kernel::ALL {
        assert!(all_cases(kernel).len() >= 4, "{}: too few cases", kernel.name());
        assert_eq!(Kernel::from_name(kernel.name()), Some(kernel));
        assert!(!profiles_of(kernel).is_empty(), "{}: no profile runs it", kernel.name());
    }
}

#[test]
fn matmul_tiled_matches_twin() {
    check(Kernel::MatmulTiled);
}

#[test]
fn matmul_split_matches_twin() {
    check(Kernel::MatmulSplit);
}

#[test]
fn ln_qkv_split_matches_twin() {
    check(Kernel::LnQkvSplit);
}

#[test]
fn matvec_residual_split_matches_twin() {
    check(Kernel::MatvecResidualSplit);
}

#[test]
fn ln_fc_gelu_split_matches_twin() {
    check(Kernel::LnFcGeluSplit);
}

#[test]
fn rms_qkv_split_matches_twin() {
    check(Kernel::RmsQkvSplit);
}

#[test]
fn rms_swiglu_split_matches_twin() {
    check(Kernel::RmsSwigluSplit);
}

#[test]
fn attention_split_matches_twin() {
    check(Kernel::AttentionSplit);
}

#[test]
fn attention_combine_matches_twin() {
    check(Kernel::AttentionCombine);
}

#[test]
fn attention_proj_split_matches_twin() {
    check(Kernel::AttentionProjSplit);
}

#[test]
fn lm_head_split_matches_twin() {
    check(Kernel::LmHeadSplit);
}

#[test]
fn argmax_matches_twin() {
    check(Kernel::Argmax);
}

#[test]
fn block_sum_matches_twin() {
    check(Kernel::BlockSum);
}

#[test]
fn gelu_stays_finite_for_huge_inputs() {
    let x = [1e4f32, -1e4, 80.0, -80.0, 0.0];
    let c = cases::config(1, 1, 1, 1);
    let (params, groups) =
        cases::launch(&gelu::Shape { cols: x.len() as u32 }, &At::rows(&c, 1), Format::F32);
    let Some((ctx, pipelines)) = gpu() else { return };
    let out = pollster::block_on(run_kernel(
        ctx,
        pipelines,
        Kernel::Gelu,
        &params,
        &[bytes(&x)],
        None,
        groups,
    ))
    .expect("kernel runs");
    assert_close("gelu extremes", &out[0], &[1e4, 0.0, 80.0, 0.0, 0.0], 1e-6, 1e-6);
}

/// The self-test's own verdicts: all pass here, every case of the profile's
/// kernels is run, and a corrupted kernel (the page's `selftest_fault=`
/// hook) fails with a reason naming it.
#[test]
fn self_test_passes_and_catches_a_wrong_kernel() {
    let Some((ctx, _)) = gpu() else { return };
    let profile = Profile::Cpu;
    let results = pollster::block_on(selftest::check_kernels(ctx, profile, None));
    let split = Split::DEFAULT;
    let cases: usize = profile.kernels().iter().map(|&k| cases::cases(k, split).len()).sum();
    assert_eq!(results.len(), cases);
    for r in &results {
        assert!(r.passed(), "{} {}: {:?}", r.kernel.name(), r.shape, r);
        assert!(r.worst_ratio.is_finite() && r.max_abs.is_finite());
    }
    let fault = Some(Kernel::MatvecResidual);
    let faulty = pollster::block_on(selftest::check_kernels(ctx, profile, fault));
    let failed: Vec<_> = faulty.iter().filter(|r| !r.passed()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].kernel, Kernel::MatvecResidual);
    assert!(failed[0].detail.as_deref().unwrap().contains("GPU"), "{:?}", failed[0].detail);
}

#[test]
fn grid_folds_large_counts_into_two_dimensions() {
    assert_eq!(grid_1d(1), [1, 1, 1]);
    assert_eq!(grid_1d(64 * 65_535), [65_535, 1, 1]);
    let [x, y, _] = grid_1d(64 * 65_535 + 1);
    assert!(x <= MAX_GROUPS_PER_DIM && y == 2 && (x * y) as usize * 64 > 64 * 65_535);
}

//! The on-device self-test (`?selftest=1` in the page): every kernel against
//! its CPU twin on this adapter (the [`cases`] table the native tests run),
//! then the whole model on the GPU against the CPU engine for a few greedy
//! steps. The report is plain text for a bug report; a failure tells the
//! caller to run on the CPU engine instead.

mod attention;
pub mod cases;
mod family;
mod family_fused;
mod fused;
mod inputs;
mod mass;
mod prefill;
mod rows;
mod split;

use std::fmt::Write as _;
use std::rc::Rc;

use web_time::Instant;

use crate::cpu::CpuSession;
use crate::error::Result;
use crate::gpu::testing::run_kernel;
use crate::gpu::{GpuContext, GpuModel, GpuSession, Pipelines};
use crate::kernels::{Kernel, Profile, Split};
use crate::sample::argmax;
use crate::step::Wanted;
use crate::storage::format::Format;
use cases::{Case, Tolerance};

/// One case of one kernel: how far the GPU was from the CPU twin.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseResult {
    pub kernel: Kernel,
    pub format: Format,
    /// The sizes in words, led by the weight format for kernels that read weights.
    pub shape: String,
    /// Largest `|gpu - cpu|` over every output (infinite for NaN or an error).
    pub max_abs: f32,
    /// Largest `|gpu - cpu| / (atol + rtol · |cpu|)`: ≤ 1 passes.
    pub worst_ratio: f32,
    pub tolerance: Tolerance,
    /// Upload, dispatch and readback, in milliseconds.
    pub ms: f64,
    /// Set when the kernel did not run at all (its message), or where it failed first.
    pub detail: Option<String>,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.detail.is_none() && self.worst_ratio <= 1.0
    }
}

/// Runs one case with `pipelines` (for the page's `selftest_fault=` test
/// hook, ones compiled with [`Pipelines::faulted`]: the kernel itself
/// stores wrong values on the device, and the comparison must catch it).
pub async fn run_case(ctx: &GpuContext, pipelines: &Pipelines, case: &Case) -> CaseResult {
    let started = Instant::now();
    let buffers: Vec<&[u8]> = case.buffers.iter().map(Vec::as_slice).collect();
    let scales = case.scales.as_deref();
    let ran =
        run_kernel(ctx, pipelines, case.kernel, &case.params, &buffers, scales, case.groups).await;
    let shape = match case.kernel.reads_weights() {
        true => format!("{} {}", case.format.name(), case.shape),
        false => case.shape.clone(),
    };
    let mut result = CaseResult {
        kernel: case.kernel,
        format: case.format,
        shape,
        max_abs: 0.0,
        worst_ratio: 0.0,
        tolerance: case.tolerance,
        ms: 0.0,
        detail: None,
    };
    match ran {
        Ok(got) => compare(case, &got, &mut result),
        Err(e) => {
            result.max_abs = f32::INFINITY;
            result.worst_ratio = f32::INFINITY;
            result.detail = Some(e.to_string());
        }
    }
    result.ms = started.elapsed().as_secs_f64() * 1e3;
    result
}

fn compare(case: &Case, got: &[Vec<f32>], result: &mut CaseResult) {
    let Tolerance { atol, rtol } = case.tolerance;
    for (index, name, want) in &case.want {
        let got = &got[*index];
        if got.len() < want.len() {
            result.detail =
                Some(format!("{name}: {} values back, {} expected", got.len(), want.len()));
            return;
        }
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            // An exact case compares bits: its outputs are integers read as
            // f32 (block_sum's sums, argmax's indices, some of them NaN
            // patterns), not numbers to round.
            let exact = (atol, rtol) == (0.0, 0.0);
            let diff = match exact {
                true if g.to_bits() == w.to_bits() => 0.0,
                true => f32::NAN,
                false => (g - w).abs(),
            };
            let allowed = if exact { 0.0 } else { atol + rtol * w.abs() };
            // NaN compares false everywhere: count it as infinitely wrong.
            let ratio = if diff <= allowed {
                if allowed > 0.0 {
                    diff / allowed
                } else {
                    0.0
                }
            } else if diff.is_nan() {
                f32::INFINITY
            } else {
                (diff / allowed).max(1.0 + f32::EPSILON)
            };
            result.max_abs = result.max_abs.max(if diff.is_nan() { f32::INFINITY } else { diff });
            if ratio > result.worst_ratio {
                result.worst_ratio = ratio;
                if ratio > 1.0 && result.detail.is_none() {
                    result.detail = Some(match (atol, rtol) {
                        (0.0, 0.0) => format!(
                            "{name}[{i}]: GPU bits {:#010x}, CPU bits {:#010x}",
                            g.to_bits(),
                            w.to_bits()
                        ),
                        _ => format!("{name}[{i}]: GPU {g}, CPU {w}"),
                    });
                }
            }
        }
    }
}

/// Every case of every kernel `profile` runs, in every weight format, in
/// data-flow order; `fault` names a kernel whose first case runs corrupted
/// on the device (test hook: [`Pipelines::faulted`]). The pipelines are
/// compiled here, once per format.
pub async fn check_kernels(
    ctx: &GpuContext,
    profile: Profile,
    fault: Option<Kernel>,
) -> Vec<CaseResult> {
    // The kernels that read no weights have cases in f32 only: compiled once.
    let mut compiled = Vec::new();
    for format in Format::ALL {
        let kernels: Vec<Kernel> = profile.kernels();
        let kernels: Vec<Kernel> = match format {
            Format::F32 => kernels,
            _ => kernels.into_iter().filter(|k| k.reads_weights()).collect(),
        };
        compiled.push((format, Pipelines::of(ctx, format, profile, &kernels).await));
    }
    let split = match profile {
        Profile::Gpu(split) => split,
        Profile::Cpu => Split::DEFAULT,
    };
    let mut out = Vec::new();
    for kernel in profile.kernels() {
        for (i, case) in cases::cases(kernel, split).iter().enumerate() {
            let corrupt = match fault == Some(kernel) && i == 0 {
                true => Some(Pipelines::faulted(ctx, case.format, profile, kernel).await),
                false => None,
            };
            let pipelines = match &corrupt {
                Some(p) => Some(p),
                None => compiled.iter().find(|(f, _)| *f == case.format).map(|(_, p)| p),
            };
            out.push(match pipelines {
                Some(Ok(p)) => run_case(ctx, p, case).await,
                Some(Err(e)) => not_compiled(case, e.to_string()),
                None => not_compiled(case, "no pipelines for this format".into()),
            });
        }
    }
    out
}

/// A case whose kernel did not compile.
fn not_compiled(case: &Case, why: String) -> CaseResult {
    CaseResult {
        kernel: case.kernel,
        format: case.format,
        shape: case.shape.clone(),
        max_abs: f32::INFINITY,
        worst_ratio: f32::INFINITY,
        tolerance: case.tolerance,
        ms: 0.0,
        detail: Some(why),
    }
}

/// The whole model, GPU engine against CPU engine, fed the same tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCheck {
    pub steps: usize,
    /// max |Δlogit| / max |logit| over every step (the golden tests' metric).
    pub rel_err: f32,
    pub max_abs: f32,
    /// Steps whose greedy token was the same on both engines.
    pub same_tokens: usize,
    pub gpu_ms_per_token: f64,
    pub cpu_ms_per_token: f64,
    /// Set when a step failed on either engine.
    pub error: Option<String>,
}

/// The relative tolerance of the whole-model check: the one the golden tests use.
pub const MODEL_REL_TOL: f32 = 1e-4;

impl ModelCheck {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.rel_err <= MODEL_REL_TOL && self.same_tokens == self.steps
    }
}

/// Prefills `prompt` on both engines, then decodes `steps` greedy tokens
/// (chosen from the CPU's logits, fed to both), comparing every step's logits.
pub async fn check_model(gpu: Rc<GpuModel>, prompt: &[u32], steps: usize) -> ModelCheck {
    let mut check = ModelCheck {
        steps,
        rel_err: 0.0,
        max_abs: 0.0,
        same_tokens: 0,
        gpu_ms_per_token: 0.0,
        cpu_ms_per_token: 0.0,
        error: None,
    };
    if let Err(e) = compare_steps(gpu, prompt, steps, &mut check).await {
        check.error = Some(e.to_string());
    }
    check
}

async fn compare_steps(
    gpu: Rc<GpuModel>,
    prompt: &[u32],
    steps: usize,
    check: &mut ModelCheck,
) -> Result<()> {
    // The CPU engine runs the very model the GPU holds: the same packed weights.
    let mut cpu = CpuSession::new(gpu.model.clone());
    let mut on_gpu = GpuSession::new(gpu)?;
    let mut want = cpu.forward(prompt, Wanted::Last)?;
    let mut got = on_gpu.prefill(prompt, Wanted::Last).await?;
    let (mut gpu_ms, mut cpu_ms) = (0.0, 0.0);
    for step in 0..steps {
        let (abs, scale) = diff(&got, &want);
        check.max_abs = check.max_abs.max(abs);
        check.rel_err = check.rel_err.max(abs / scale);
        let token = argmax(&want);
        check.same_tokens += usize::from(argmax(&got) == token);
        if step + 1 == steps || cpu.pos() + 1 > cpu.config().n_positions {
            check.steps = step + 1;
            break;
        }
        let t = Instant::now();
        want = cpu.forward(&[token], Wanted::Last)?;
        cpu_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        got = on_gpu.decode(token).await?;
        gpu_ms += t.elapsed().as_secs_f64() * 1e3;
    }
    let decoded = check.steps.saturating_sub(1).max(1) as f64;
    check.gpu_ms_per_token = gpu_ms / decoded;
    check.cpu_ms_per_token = cpu_ms / decoded;
    Ok(())
}

/// (max |got - want|, max |want|); NaN counts as infinite.
fn diff(got: &[f32], want: &[f32]) -> (f32, f32) {
    let abs = got.iter().zip(want).fold(0.0f32, |m, (g, w)| {
        let d = (g - w).abs();
        if d.is_nan() {
            f32::INFINITY
        } else {
            m.max(d)
        }
    });
    let scale = want.iter().fold(0.0f32, |m, w| m.max(w.abs())).max(f32::MIN_POSITIVE);
    (if got.len() == want.len() { abs } else { f32::INFINITY }, scale)
}

/// The whole self-test, ready to show and copy.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub adapter: String,
    /// How the model check's GPU model stores its weight matrices.
    pub weights: Format,
    /// The kernels checked: the model's profile.
    pub profile: Profile,
    /// The device limits the engine depends on, by WebGPU name.
    pub limits: Vec<(&'static str, u64)>,
    pub kernels: Vec<CaseResult>,
    pub model: ModelCheck,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.kernels.iter().all(CaseResult::passed) && self.model.passed()
    }

    /// Why the GPU engine should not be trusted here, or `None` if it can.
    pub fn failure(&self) -> Option<String> {
        if let Some(c) = self.kernels.iter().find(|c| !c.passed()) {
            let why = c.detail.clone().unwrap_or_default();
            return Some(format!(
                "the self-test found the {} kernel wrong on this GPU ({}: {why})",
                c.kernel.name(),
                c.shape
            ));
        }
        (!self.model.passed()).then(|| match &self.model.error {
            Some(e) => format!("the self-test could not run the model on this GPU: {e}"),
            None => format!(
                "the self-test found the model's logits off on this GPU (relative error {:.1e}, {}/{} tokens the same)",
                self.model.rel_err, self.model.same_tokens, self.model.steps
            ),
        })
    }

    /// Plain text for a bug report.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        let _ = writeln!(s, "Decode Lab self-test: {verdict}");
        let _ = writeln!(s, "adapter: {}", self.adapter);
        let _ = writeln!(s, "kernels: the {} profile", self.profile.name());
        for (name, value) in &self.limits {
            let _ = writeln!(s, "  {name}: {value}");
        }
        let _ = writeln!(s, "kernels (GPU vs CPU twin; pass: |Δ| <= atol + rtol·|cpu|):");
        for c in &self.kernels {
            let _ = writeln!(
                s,
                "  {} {:<12} {:<36} max |Δ| {:.2e}  atol {:.1e} rtol {:.0e}  {:.1} ms{}",
                if c.passed() { "pass" } else { "FAIL" },
                c.kernel.name(),
                c.shape,
                c.max_abs,
                c.tolerance.atol,
                c.tolerance.rtol,
                c.ms,
                c.detail.as_ref().map(|d| format!("  ({d})")).unwrap_or_default()
            );
        }
        let m = &self.model;
        let _ = writeln!(
            s,
            "model ({} greedy steps, {} weights, GPU vs CPU engine): {}  relative error {:.2e} (allowed {MODEL_REL_TOL:.0e}), max |Δlogit| {:.2e}, same tokens {}/{}, GPU {:.2} ms/token, CPU {:.2} ms/token{}",
            m.steps,
            self.weights.name(),
            if m.passed() { "pass" } else { "FAIL" },
            m.rel_err,
            m.max_abs,
            m.same_tokens,
            m.steps,
            m.gpu_ms_per_token,
            m.cpu_ms_per_token,
            m.error.as_ref().map(|e| format!("  ({e})")).unwrap_or_default()
        );
        s
    }
}

/// Runs everything on `gpu`'s device: kernels, then the model on `prompt`.
pub async fn run(gpu: Rc<GpuModel>, prompt: &[u32], steps: usize, fault: Option<Kernel>) -> Report {
    let profile = gpu.profile();
    let kernels = check_kernels(&gpu.ctx, profile, fault).await;
    let l = &gpu.ctx.limits;
    let limits = vec![
        ("maxStorageBufferBindingSize", l.max_storage_buffer_binding_size),
        ("maxBufferSize", l.max_buffer_size),
        ("maxStorageBuffersPerShaderStage", u64::from(l.max_storage_buffers_per_shader_stage)),
        ("maxComputeWorkgroupsPerDimension", u64::from(l.max_compute_workgroups_per_dimension)),
        ("maxComputeInvocationsPerWorkgroup", u64::from(l.max_compute_invocations_per_workgroup)),
        ("maxComputeWorkgroupStorageSize", u64::from(l.max_compute_workgroup_storage_size)),
    ];
    let adapter = gpu.ctx.adapter_name();
    let weights = gpu.format();
    let model = check_model(gpu, prompt, steps).await;
    Report { adapter, weights, profile, limits, kernels, model }
}

//! `decode-lab gpu-bench`: everything a machine with a real GPU should be
//! measured on, in one run (`./tools/dev gpu-bench` builds and calls it).
//! The self-test of both kernel profiles on the first model, then `bench`
//! on every model in every weight format with the cpu profile and the gpu
//! profile (its layout timed); one text table and one JSON in `--out`, every
//! bench's full text in a log beside them, and the table printed last.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::gpu::GpuContext;
use engine::kernels::KernelsChoice;
use engine::model::{Model, Tokenizer, WeightsChoice};
use engine::open::{open, Choice, Engine, EngineChoice};
use engine::storage::format::Format;
use engine::{EngineError, Result};
use serde::Serialize;

use crate::bench::{self, Figures, Plan};

/// One bench run, labelled.
#[derive(Serialize)]
struct Row {
    model: String,
    kernels: &'static str,
    figures: Figures,
}

/// One self-test, labelled.
#[derive(Serialize)]
struct Check {
    kernels: &'static str,
    passed: bool,
    report: String,
}

/// The kernel choices each model is measured with.
const KERNELS: [(&str, KernelsChoice); 2] =
    [("cpu", KernelsChoice::Exactly(engine::kernels::Profile::Cpu)), ("gpu", KernelsChoice::Gpu)];

/// Runs everything on `models` and writes `gpu-bench.txt`, `gpu-bench.json`
/// and `gpu-bench.log` into `out`.
/// `gpu-bench`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// A model folder (repeat for several; the first is also self-tested).
    #[arg(long, required = true)]
    model: Vec<PathBuf>,
    #[arg(long)]
    out: PathBuf,
}

pub async fn command(a: Args) -> Result<()> {
    run(&a.model, &a.out).await
}

pub async fn run(models: &[PathBuf], out: &Path) -> Result<()> {
    let io = |e: std::io::Error| EngineError::Setting(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    let ctx = GpuContext::new().await?;
    let adapter = ctx.adapter_name();
    let mut log = format!("adapter: {adapter}\n");
    let mut checks = Vec::new();
    if let Some(first) = models.first() {
        for (name, kernels) in KERNELS {
            let check = selftest(&ctx, first, kernels).await?;
            log += &format!("\n== self-test, kernels {name}\n{}", check.report);
            // Written as it goes: a run cut short still leaves what it measured.
            std::fs::write(out.join("gpu-bench.log"), &log).map_err(io)?;
            checks.push(Check { kernels: name, ..check });
        }
    }
    let mut rows = Vec::new();
    for dir in models {
        for format in Format::ALL {
            for (name, kernels) in KERNELS {
                let model = Arc::new(Model::from_dir_as(dir, WeightsChoice::Exactly(format))?);
                let engine =
                    EngineChoice::Gpu { ctx: Box::new(ctx.clone()), kernels, memory: None };
                let weights = WeightsChoice::Exactly(format);
                let (engine, chose) = open(model, Choice { engine, weights }).await?;
                let plan = Plan {
                    prompt_len: 64,
                    tokens: 32,
                    no_cache: false,
                    prefill_by_decode: false,
                    batch: 1,
                    kernel_times: true,
                };
                let (figures, text) = bench::measure(engine.session()?, chose, plan).await?;
                log += &format!(
                    "\n== bench {} {} kernels {name}\n{text}",
                    dir.display(),
                    format.name()
                );
                rows.push(Row { model: dir.display().to_string(), kernels: name, figures });
                std::fs::write(out.join("gpu-bench.log"), &log).map_err(io)?;
                drop(engine);
            }
        }
    }
    let table = table(&adapter, &checks, &rows);
    let json = serde_json::json!({ "adapter": adapter, "selftest": checks, "rows": rows });
    std::fs::write(out.join("gpu-bench.log"), &log).map_err(io)?;
    std::fs::write(out.join("gpu-bench.txt"), &table).map_err(io)?;
    std::fs::write(out.join("gpu-bench.json"), json.to_string()).map_err(io)?;
    print!("{table}");
    match checks.iter().find(|c| !c.passed) {
        Some(c) => Err(EngineError::Gpu(format!(
            "the self-test of the {} kernels failed: see gpu-bench.log",
            c.kernels
        ))),
        None => Ok(()),
    }
}

/// The self-test of `dir`'s model with `kernels` on `ctx`.
async fn selftest(ctx: &GpuContext, dir: &Path, kernels: KernelsChoice) -> Result<Check> {
    let model = Arc::new(Model::from_dir(dir)?);
    let prompt = Tokenizer::from_dir(dir)?.encode("To be, or not to be")?;
    let engine = EngineChoice::Gpu { ctx: Box::new(ctx.clone()), kernels, memory: None };
    let (engine, _) = open(model, Choice { engine, weights: WeightsChoice::Auto }).await?;
    let Engine::Gpu(gpu) = engine else {
        return Err(EngineError::Gpu("the self-test needs the GPU engine".into()));
    };
    let report = engine::gpu::selftest::run(gpu, &prompt, 16, None).await;
    Ok(Check { kernels: "", passed: report.passed(), report: report.text() })
}

/// The text table: the self-tests, then a row per bench run.
fn table(adapter: &str, checks: &[Check], rows: &[Row]) -> String {
    let mut t = format!("decode-lab gpu-bench on {adapter}\n");
    for c in checks {
        let _ = writeln!(
            t,
            "self-test, {} kernels: {}",
            c.kernels,
            if c.passed { "PASS" } else { "FAIL" }
        );
    }
    let _ = writeln!(
        t,
        "{:<28} {:<11} {:<7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>9} {:>6}",
        "model",
        "weights",
        "kernels",
        "ms/token",
        "GPU ms",
        "tokens/s",
        "MB/token",
        "GB/s",
        "% read",
        "Σ chain",
        "disp."
    );
    for r in rows {
        let f = &r.figures;
        let name =
            Path::new(&r.model).file_name().map_or(r.model.clone(), |n| n.to_string_lossy().into());
        let ms = f.gpu_ms_per_token.unwrap_or(f.decode_ms_per_token);
        let _ = writeln!(
            t,
            "{:<28} {:<11} {:<7} {:>9.3} {:>9} {:>9.1} {:>9.1} {:>8.1} {:>7.1} {:>9} {:>6.0}",
            name,
            f.weights,
            f.kernels.as_deref().and_then(|k| k.split(' ').next()).unwrap_or(r.kernels),
            f.decode_ms_per_token,
            f.gpu_ms_per_token.map_or("—".into(), |g| format!("{g:.3}")),
            f.tokens_per_s,
            f.reads_per_token / 1e6,
            f.reads_per_token / (ms / 1e3) / 1e9,
            100.0 * f.share_of_read_rate,
            f.chain_sum.map_or("—".into(), |c| c.to_string()),
            f.dispatches_per_token,
        );
    }
    if let Some(f) = rows.first().map(|r| &r.figures) {
        let peak = engine::peak::share(&f.backend, f.read_bytes_per_s)
            .map_or(String::new(), |share| format!(" ({share})"));
        let _ = writeln!(t, "read rate (block_sum): {:.1} GB/s{peak}; GB/s and % over GPU time where the device has timestamps", f.read_bytes_per_s / 1e9);
    }
    t
}

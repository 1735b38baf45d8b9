//! `decode-lab kv-quality`: what each KV cache policy costs in quality on a
//! held-out text (the model's own `heldout.txt` unless `--text` names one),
//! against the full cache fed the same tokens: bits per byte, mean KL and
//! same-top-1 — the figures the `kv-budget` widget shows, for a course
//! author to check them.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use engine::kv_policy::KvPolicy;
use engine::kv_quality::{measure, Progress};
use engine::model::Tokenizer;
use engine::open::Engine;
use engine::{EngineError, Result};

/// What to score.
pub struct Job {
    pub policies: Vec<KvPolicy>,
    /// The text (`None`: the model folder's `heldout.txt`).
    pub text: Option<PathBuf>,
    /// Score only its first this many tokens (0: all).
    pub tokens: usize,
    pub json: bool,
}

pub async fn run(dir: &Path, engine: Engine, job: Job) -> Result<()> {
    let tokenizer = Tokenizer::from_dir(dir)?;
    let path = job.text.clone().unwrap_or_else(|| dir.join("heldout.txt"));
    let text = std::fs::read_to_string(&path).map_err(|e| match job.text {
        None => EngineError::Setting(format!(
            "this model ships no held-out passage ({}: {e}): give one with --text FILE",
            path.display()
        )),
        Some(_) => EngineError::Setting(format!("--text {}: {e}", path.display())),
    })?;
    let mut ids = tokenizer.encode(&text)?;
    if job.tokens > 0 {
        ids.truncate(job.tokens);
    }
    let open = |policy| engine.session()?.with_kv_policy(policy);
    let bytes_of = |t| tokenizer.token_bytes(t);
    let terminal = std::io::stderr().is_terminal();
    let progress = |p: Progress| {
        if terminal {
            eprint!("\rscored {} of {} runs (a window under one policy)", p.done, p.total);
        }
        true
    };
    let drifts = measure(open, &ids, &job.policies, bytes_of, progress).await?;
    if terminal {
        eprintln!();
    }
    // K and V, every layer, f32: a token's bytes in either engine's cache.
    let c = engine.session()?.config().clone();
    let per_token = (2 * c.n_layer * c.n_embd * 4) as f64;
    let mut out = std::io::stdout().lock();
    if job.json {
        let rows = job.policies.iter().zip(&drifts).map(|(p, d)| {
            serde_json::json!({
                "policy": p.name(),
                "budget": p.budget(),
                "bits_per_byte": d.bits_per_byte(),
                "full_bits_per_byte": full_bits_per_byte(d),
                "kl_mean": d.kl_mean,
                "same_top1": d.same_top1,
                "positions": d.positions,
            })
        });
        let _ = writeln!(out, "{}", serde_json::Value::Array(rows.collect()));
        return Ok(());
    }
    let _ = writeln!(out, "text: {} ({} tokens)", path.display(), ids.len());
    let Some(first) = drifts.first() else { return Ok(()) };
    let _ = writeln!(
        out,
        "{:<22} {:>8} {:>12} {:>10} {:>12} {:>10}",
        "policy", "budget", "cache bytes", "bits/byte", "KL (nats)", "same top-1"
    );
    let full = full_bits_per_byte(first);
    let _ = writeln!(
        out,
        "{:<22} {:>8} {:>12} {:>10.4} {:>12} {:>10}",
        "full", "-", "-", full, "0", "100.0%"
    );
    for (p, d) in job.policies.iter().zip(&drifts) {
        let budget = p.budget().map_or("-".into(), |b| b.to_string());
        let bytes = p.budget().map_or("-".into(), |b| format!("{:.0}", b as f64 * per_token));
        let _ = writeln!(
            out,
            "{:<22} {budget:>8} {bytes:>12} {:>10.4} {:>12.6} {:>9.1}%",
            p.name(),
            d.bits_per_byte(),
            d.kl_mean,
            d.same_top1 * 100.0
        );
    }
    let _ = writeln!(
        out,
        "positions scored: {} (windows of the context, from an empty cache)",
        first.positions
    );
    Ok(())
}

/// The full cache's bits per byte over the same positions.
fn full_bits_per_byte(d: &engine::quality::Drift) -> f64 {
    d.reference_nats_per_token * d.positions as f64 / std::f64::consts::LN_2 / d.bytes.max(1) as f64
}

//! `decode-lab kv-quality`: what a smaller KV cache costs in quality on a
//! held-out text (the model's own `heldout.txt` unless `--text` names one),
//! against the full cache fed the same tokens: each `--kv-policy` on the
//! model as loaded, and each `--kv-groups` (the model converted to grouped
//! K/V heads, full cache) — bits per byte, mean KL and same top-1, the
//! figures the `kv-budget` widget shows, for a course author to check them.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::kv_policy::KvPolicy;
use engine::lessons::kv_quality::{measure, Progress};
use engine::lessons::quality::Drift;
use engine::model::Tokenizer;
use engine::open::Engine;
use engine::{EngineError, Result};

use crate::engine_args::{kv_policy, EngineArgs};

/// One row of the table: a cache policy, or grouped K/V heads.
pub enum Variant {
    Policy(KvPolicy),
    /// G groups, with the engine over the converted model.
    Groups(usize, Engine),
}

impl Variant {
    fn name(&self) -> String {
        match self {
            Variant::Policy(p) => p.name(),
            Variant::Groups(g, _) => format!("groups:{g} (full cache)"),
        }
    }
}

/// What to score.
pub struct Job {
    pub variants: Vec<Variant>,
    /// The text (`None`: the model folder's `heldout.txt`).
    pub text: Option<PathBuf>,
    /// Score only its first this many tokens (0: all).
    pub tokens: usize,
    pub json: bool,
}

/// `kv-quality`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
    /// A policy to score (repeat for several): window:W, sinks:S,window:W[,positions:cache] or
    /// heavy:H,recent:R.
    #[arg(long = "kv-policy", value_parser = kv_policy)]
    kv_policy: Vec<KvPolicy>,
    /// A number of K/V head groups to score, the model converted and its cache full (repeat for several).
    #[arg(long = "kv-groups")]
    kv_groups: Vec<usize>,
    /// The text to score (default: heldout.txt in the model folder).
    #[arg(long)]
    text: Option<PathBuf>,
    /// Score only the text's first this many tokens (0 = all of it).
    #[arg(long, default_value_t = 0)]
    tokens: usize,
    /// One JSON array instead of the table.
    #[arg(long)]
    json: bool,
}

/// Opens the model once as loaded and once per number of groups, then scores.
pub async fn command(a: Args) -> Result<()> {
    if a.kv_policy.is_empty() && a.kv_groups.is_empty() {
        return Err(EngineError::Setting(
            "nothing to score: give --kv-policy or --kv-groups (each may repeat)".into(),
        ));
    }
    let loaded = a.engine.load()?;
    let mut variants: Vec<_> = a.kv_policy.into_iter().map(Variant::Policy).collect();
    for g in a.kv_groups {
        let (engine, _) = a.engine.engine_for(Arc::new(loaded.with_kv_groups(g)?)).await?;
        variants.push(Variant::Groups(g, engine));
    }
    let (engine, _) = a.engine.engine_for(Arc::new(loaded)).await?;
    let job = Job { variants, text: a.text, tokens: a.tokens, json: a.json };
    run(&a.engine.model, engine, job).await
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
    let open = |i: Option<usize>| match i.map(|i| &job.variants[i]) {
        None => engine.session(),
        Some(Variant::Policy(p)) => engine.session()?.with_kv_policy(*p),
        Some(Variant::Groups(_, grouped)) => grouped.session(),
    };
    let bytes_of = |t| tokenizer.token_bytes(t);
    let terminal = std::io::stderr().is_terminal();
    let progress = |p: Progress| {
        if terminal {
            eprint!("\rscored {} of {} runs (a window of one variant)", p.done, p.total);
        }
        true
    };
    let drifts = measure(open, job.variants.len(), &ids, bytes_of, progress).await?;
    if terminal {
        eprintln!();
    }
    let config = engine.session()?.config().clone();
    let scored = Scored { variants: &job.variants, drifts: &drifts, config: &config };
    match job.json {
        true => scored.json(),
        false => scored.table(&path, ids.len()),
    }
    Ok(())
}

/// Each variant's figures, and what it is scored against.
struct Scored<'a> {
    variants: &'a [Variant],
    drifts: &'a [Drift],
    config: &'a engine::model::Config,
}

impl Scored<'_> {
    /// K and V, every layer, f32, at the whole context: what a cache holds at most.
    fn full_bytes(&self) -> f64 {
        let c = self.config;
        (2 * c.n_layer * c.n_embd * 4 * c.n_positions) as f64
    }

    fn bytes(&self, v: &Variant) -> f64 {
        let c = self.config;
        let per_token = self.full_bytes() / c.n_positions as f64;
        match v {
            Variant::Policy(p) => {
                p.budget().unwrap_or(c.n_positions).min(c.n_positions) as f64 * per_token
            }
            Variant::Groups(g, _) => self.full_bytes() * *g as f64 / c.n_head as f64,
        }
    }

    fn json(&self) {
        let rows = self.variants.iter().zip(self.drifts).map(|(v, d)| {
            serde_json::json!({
                "variant": v.name(),
                "cache_bytes": self.bytes(v),
                "bits_per_byte": d.bits_per_byte(),
                "full_bits_per_byte": full_bits_per_byte(d),
                "kl_mean": d.kl_mean,
                "same_top1": d.same_top1,
                "positions": d.positions,
            })
        });
        let _ = writeln!(std::io::stdout().lock(), "{}", serde_json::Value::Array(rows.collect()));
    }

    fn table(&self, path: &Path, tokens: usize) {
        let Some(first) = self.drifts.first() else { return };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "text: {} ({tokens} tokens)", path.display());
        let _ = writeln!(
            out,
            "{:<34} {:>14} {:>10} {:>12} {:>10}",
            "cache", "bytes at ctx", "bits/byte", "KL (nats)", "same top-1"
        );
        let (full, fb) = (self.full_bytes(), full_bits_per_byte(first));
        let _ =
            writeln!(out, "{:<34} {full:>14.0} {fb:>10.4} {:>12} {:>10}", "full", "0", "100.0%");
        for (v, d) in self.variants.iter().zip(self.drifts) {
            let _ = writeln!(
                out,
                "{:<34} {:>14.0} {:>10.4} {:>12.6} {:>9.1}%",
                v.name(),
                self.bytes(v),
                d.bits_per_byte(),
                d.kl_mean,
                d.same_top1 * 100.0
            );
        }
        let _ = writeln!(
            out,
            "positions scored: {} (windows of the context, each from an empty cache)",
            first.positions
        );
    }
}

/// The full cache's bits per byte over the same positions.
fn full_bits_per_byte(d: &Drift) -> f64 {
    d.reference_nats_per_token * d.positions as f64 / std::f64::consts::LN_2 / d.bytes.max(1) as f64
}

//! `decode-lab generate --speculate K` with `--draft DIR` (a smaller model
//! sharing the tokenizer) or `--draft-layers L` (the target's own first L
//! blocks through `ln_f` and the LM head): the text, then α (the share of
//! drafted tokens kept), tokens per target pass, and the wall time against
//! plain decoding of the same prompt and settings in the same run.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use engine::model::Tokenizer;
use engine::run::Run;
use engine::speculate::generate;
use engine::{EngineError, Result, Session};

use crate::engine_args::{CacheArgs, EngineArgs};

/// The draft and K.
#[derive(clap::Args)]
pub struct SpeculateArgs {
    /// Decode speculatively: the draft proposes this many tokens a round (1 to 16).
    #[arg(long)]
    speculate: Option<usize>,
    /// The draft: a model folder sharing the target's tokenizer.
    #[arg(long, conflicts_with = "draft_layers")]
    draft: Option<PathBuf>,
    /// The draft: the target's own first L blocks (self-speculation).
    #[arg(long)]
    draft_layers: Option<usize>,
}

impl SpeculateArgs {
    /// Whether the flags ask for speculative decoding (a draft without K is an error).
    pub fn asked(&self) -> Result<bool> {
        match (self.speculate, self.draft.is_some() || self.draft_layers.is_some()) {
            (Some(_), true) => Ok(true),
            (None, false) => Ok(false),
            (Some(_), false) => Err(EngineError::Setting(
                "--speculate needs a draft: --draft DIR or --draft-layers L".into(),
            )),
            (None, true) => Err(EngineError::Setting(
                "a draft drafts for --speculate K: give K (1 to 16)".into(),
            )),
        }
    }
}

pub async fn run(
    on: &EngineArgs,
    cache: &CacheArgs,
    spec: &SpeculateArgs,
    tokenizer: &Tokenizer,
    prompt_text: &str,
    job: &engine::run::Job,
) -> Result<()> {
    let k = spec.speculate.unwrap_or(0);
    let target_model = cache.convert(on.load()?)?;
    let (draft_model, draft_name) = match (&spec.draft, spec.draft_layers) {
        (Some(dir), _) => {
            same_tokenizer(tokenizer, &Tokenizer::from_dir(dir)?)?;
            let draft = EngineArgs { model: dir.clone(), ..on.clone() };
            (draft.load()?, dir.display().to_string())
        }
        (None, Some(l)) => (target_model.first_blocks(l)?, format!("its first {l} blocks")),
        (None, None) => unreachable!("asked() checked a draft is given"),
    };
    let target = on.engine_for(Arc::new(target_model)).await?.0;
    let draft = on.engine_for(Arc::new(draft_model)).await?.0;
    let prompt = tokenizer.encode(prompt_text)?;
    let with_policy = |s: Session| s.with_kv_policy(cache.kv_policy);
    // Plain decoding first: the same prompt, settings and seed, the target alone.
    let start = std::time::Instant::now();
    let mut plain = Run::start_ids(with_policy(target.session()?)?, prompt.clone(), job).await?;
    while job.max_tokens > 0 && plain.step(tokenizer, None).await?.done.is_none() {}
    let plain_tokens = plain.history()[prompt.len()..].to_vec();
    let plain_ms = start.elapsed().as_secs_f64() * 1e3;
    let (mut t, mut d) = (with_policy(target.session()?)?, with_policy(draft.session()?)?);
    let start = std::time::Instant::now();
    let out = generate(&mut t, &mut d, &prompt, job, k, |_| true).await?;
    let spec_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut stdout = std::io::stdout().lock();
    let text = tokenizer.decode(&out.tokens)?;
    let _ = writeln!(stdout, "{prompt_text}{text}");
    let greedy = job.settings.temperature == 0.0;
    let same = if out.tokens == plain_tokens { "the same" } else { "different" };
    eprintln!(
        "[speculative: K = {k}, draft {draft_name}; α {:.3}; {:.2} tokens per target pass; {} rounds, {} target passes, {} draft passes]",
        out.acceptance(),
        out.tokens_per_pass(),
        out.rounds.len(),
        out.target_passes,
        out.draft_passes
    );
    eprintln!(
        "[wall: speculative {spec_ms:.1} ms for {} tokens, plain decoding {plain_ms:.1} ms for {}: {:.2}× — {same} text{}]",
        out.tokens.len(),
        plain_tokens.len(),
        plain_ms / spec_ms.max(1e-9),
        if greedy { " (greedy: must be the same)" } else { " (sampled: the draws differ)" }
    );
    Ok(())
}

/// A draft must mean what the target means by every id: its proposals are
/// ids the target scores (the prompt is encoded once, by the target).
fn same_tokenizer(target: &Tokenizer, draft: &Tokenizer) -> Result<()> {
    match target.differs_from(draft) {
        None => Ok(()),
        Some(diff) => Err(EngineError::Setting(format!(
            "the draft's tokenizer is not the target's ({}): a draft must share the vocabulary",
            diff.describe("the target", "the draft")
        ))),
    }
}

//! `decode-lab logits`: the model's raw logits as JSON, one row per input
//! token — how the golden checks compare us with `transformers`.

use std::io::Write;

use clap::ValueEnum;
use engine::model::Tokenizer;
use engine::{EngineError, Result, Session, Wanted};

use crate::engine_args::{CacheArgs, EngineArgs};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Mode {
    /// All tokens in one batched pass.
    Prefill,
    /// One token at a time through the KV cache.
    Decode,
}

/// `logits`' flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
    /// Comma-separated token ids, e.g. 12,7,99.
    #[arg(long, value_delimiter = ',')]
    tokens: Vec<u32>,
    /// Instead of --tokens: this text, read by the model's tokenizer.
    #[arg(long, conflicts_with = "tokens")]
    prompt: Option<String>,
    #[command(flatten)]
    cache: CacheArgs,
    #[arg(long, value_enum, default_value = "prefill")]
    mode: Mode,
}

/// Prints `{"tokens": [...], "logits": [[...], ...]}`.
pub async fn run(a: Args) -> Result<()> {
    let tokens = match &a.prompt {
        Some(text) => Tokenizer::from_dir(&a.engine.model)?.encode(text)?,
        None => a.tokens,
    };
    // Checked before the model loads, as the flags of `generate` are.
    if tokens.is_empty() {
        return Err(EngineError::Setting(
            "no token ids: give them with --tokens, e.g. --tokens 12,7,99, or a --prompt".into(),
        ));
    }
    let (session, _) = a.engine.open(&a.cache).await?;
    print(session, &tokens, a.mode).await
}

async fn print(mut session: Session, tokens: &[u32], mode: Mode) -> Result<()> {
    let vocab = session.config().vocab_size;
    let rows: Vec<f32> = match mode {
        Mode::Prefill => session.prefill(tokens, Wanted::All).await?,
        Mode::Decode => {
            let mut all = Vec::with_capacity(tokens.len() * vocab);
            for &t in tokens {
                all.extend(session.decode(t).await?);
            }
            all
        }
    };
    let rows: Vec<&[f32]> = rows.chunks(vocab).collect();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ =
        writeln!(std::io::stdout(), "{}", serde_json::json!({ "tokens": tokens, "logits": rows }));
    Ok(())
}

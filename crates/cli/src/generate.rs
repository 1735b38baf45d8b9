//! `decode-lab generate`: sampling (every pipeline flag, stop strings) or beam
//! search, streaming text to stdout as it becomes final.

use std::io::Write;

use engine::beam::{BeamSearch, BeamSettings, Ends, Scoring};
use engine::model::{ChatPrompt, ChatTemplate, Tokenizer};
use engine::run::Run;
use engine::run_batch::BatchRun;
use engine::sample::{StopMatcher, Stopped};
use engine::{EngineError, Result, Session};

use crate::engine_args::{check_batch_size, ends_choice, CacheArgs, EngineArgs, PipelineArgs};
use crate::speculate::{self, SpeculateArgs};

/// `generate`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
    #[arg(long)]
    prompt: String,
    /// The prompt is a user's turn in the model's chat template
    /// (tokenizer_config.json); the reply ends at the model's end of turn and
    /// only the reply is printed.
    #[arg(long)]
    chat: bool,
    /// A system turn before the user's (with --chat).
    #[arg(long, requires = "chat")]
    system: Option<String>,
    /// An earlier turn of the conversation, before the prompt (with --chat;
    /// repeat: user, assistant, user, assistant … — the prompt is the next
    /// user turn).
    #[arg(long = "turn", requires = "chat")]
    turns: Vec<String>,
    #[command(flatten)]
    cache: CacheArgs,
    #[arg(long, default_value_t = 100)]
    max_tokens: usize,
    #[command(flatten)]
    pipeline: PipelineArgs,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop before this text (repeat for several); it is not printed.
    #[arg(long)]
    stop: Vec<String>,
    /// Beam search with this many beams (1 = sample as the flags say).
    #[arg(long, default_value_t = 1)]
    beams: usize,
    /// Beam scores are logprob / length^this (Hugging Face's convention).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    length_penalty: f64,
    /// Count the prompt's tokens in a beam's length (Hugging Face before v4.36 did).
    #[arg(long)]
    prompt_in_length: bool,
    /// Where a beam's hypothesis ends: end-of-text, or line (also at any token holding a line break).
    #[arg(long, value_parser = ends_choice, default_value = "end-of-text")]
    ends_at: Ends,
    /// Generate this many continuations together (seeds S, S+1, …), one batched decode step per token.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[command(flatten)]
    speculation: SpeculateArgs,
}

/// `generate`: the flags checked before the model loads (a typo should not
/// cost a load), then sampling, a batch, beam search or speculative decoding.
pub async fn run(a: Args) -> Result<()> {
    engine::beam::check_beam_settings(a.beams, a.length_penalty)?;
    check_batch_size(a.batch)?;
    if a.batch > 1 && a.beams > 1 {
        return Err(EngineError::Setting(
            "--batch and --beams cannot be combined: beam search keeps its own beams".into(),
        ));
    }
    a.pipeline.settings().validate()?;
    let speculative = a.speculation.asked()?;
    if speculative && (a.beams > 1 || a.batch > 1) {
        return Err(EngineError::Setting(
            "--speculate decodes one sequence: leave out --beams and --batch".into(),
        ));
    }
    if a.chat && (speculative || a.beams > 1 || a.batch > 1) {
        return Err(EngineError::Setting(
            "--chat samples one reply: leave out --beams, --batch and --speculate".into(),
        ));
    }
    let tokenizer = Tokenizer::from_dir(&a.engine.model)?;
    let chat = match a.chat {
        true => Some(chat_prompt(&a.engine.model, &tokenizer, a.system, &a.turns, &a.prompt)?),
        false => None,
    };
    let settings = a.pipeline.settings();
    let run = engine::run::Job { settings, seed: a.seed, stop: a.stop, max_tokens: a.max_tokens };
    let job = Job { prompt: a.prompt, run };
    if speculative {
        return speculate::run(
            &a.engine,
            &a.cache,
            &a.speculation,
            &tokenizer,
            &job.prompt,
            &job.run,
        )
        .await;
    }
    let (session, _) = a.engine.open(&a.cache).await?;
    if let Some(chat) = chat {
        return reply(session, &tokenizer, chat, &job.run).await;
    }
    if a.beams != 1 {
        let scoring =
            Scoring { length_penalty: a.length_penalty, prompt_in_length: a.prompt_in_length };
        beams(session, &tokenizer, &job, a.beams, scoring, a.ends_at).await
    } else if a.batch > 1 {
        batch(session, &tokenizer, &job, a.batch).await
    } else {
        sample(session, &tokenizer, &job).await
    }
}

/// What to generate: a prompt and the run's settings.
pub struct Job {
    pub prompt: String,
    pub run: engine::run::Job,
}

/// Samples token by token through the pipeline (the same [`Run`] the app
/// uses), printing text as it becomes final.
pub async fn sample(session: Session, tokenizer: &Tokenizer, job: &Job) -> Result<()> {
    let run = Run::start(session, tokenizer, &job.prompt, &job.run).await?;
    stream(run, tokenizer, &job.prompt, job.run.max_tokens).await
}

/// `echo`, then `run`'s text as it becomes final, with the notices of a
/// prompt or a context that had to be cropped.
async fn stream(mut run: Run, tokenizer: &Tokenizer, echo: &str, max_tokens: usize) -> Result<()> {
    if let Some(c) = run.prompt_crop {
        eprintln!("[prompt cropped to its last {} tokens; {} dropped]", c.kept, c.dropped);
    }
    let mut out = std::io::stdout().lock();
    print(&mut out, echo);
    if max_tokens == 0 {
        return finish(&mut out, "");
    }
    loop {
        let step = run.step(tokenizer, None).await?;
        print(&mut out, &step.text);
        if let Some(c) = step.crop {
            eprintln!("\n[context full: kept the last {} tokens, dropped {}]", c.kept, c.dropped);
        }
        if step.done.is_some() {
            return finish(&mut out, "");
        }
    }
}

/// The user's `prompt` (after a `system` turn and the `earlier` turns) in
/// the model's chat template.
fn chat_prompt(
    dir: &std::path::Path,
    tokenizer: &Tokenizer,
    system: Option<String>,
    earlier: &[String],
    prompt: &str,
) -> Result<ChatPrompt> {
    let template = ChatTemplate::from_dir(dir)?.ok_or_else(|| {
        EngineError::Setting(format!(
            "{} has no chat template (tokenizer_config.json's chat_template or \
             chat_template.jinja): leave out --chat",
            dir.display()
        ))
    })?;
    template.prompt(tokenizer, system.as_deref(), earlier, prompt)
}

/// The model's reply to a chat prompt, printed as it becomes final.
async fn reply(
    session: Session,
    tokenizer: &Tokenizer,
    chat: ChatPrompt,
    job: &engine::run::Job,
) -> Result<()> {
    let mut run = Run::start_ids(session, chat.ids, job).await?;
    run.end_at(&chat.end_of_turn);
    stream(run, tokenizer, "", job.max_tokens).await
}

/// Several continuations generated together, one batched decode step per
/// token; each is printed whole when it ends, in order, under its seed.
pub async fn batch(session: Session, tokenizer: &Tokenizer, job: &Job, size: usize) -> Result<()> {
    let prompt_ids = tokenizer.encode(&job.prompt)?;
    let mut run = BatchRun::start(session, prompt_ids, &job.run, size).await?;
    if let Some(c) = run.prompt_crop {
        eprintln!("[prompt cropped to its last {} tokens; {} dropped]", c.kept, c.dropped);
    }
    let mut texts = vec![String::new(); size];
    let mut ms = 0.0;
    let mut steps = 0;
    while job.run.max_tokens > 0 && !run.done() {
        for (text, step) in texts.iter_mut().zip(run.step(tokenizer).await?) {
            *text += &step.map(|s| s.text).unwrap_or_default();
        }
        ms += run.batch().last_stats().wall_ms;
        steps += 1;
    }
    let mut out = std::io::stdout().lock();
    for (i, text) in texts.iter().enumerate() {
        let seed = job.run.seed.wrapping_add(i as u64);
        let _ = writeln!(out, "[continuation {} of {size}, seed {seed}]", i + 1);
        finish(&mut out, &format!("{}{text}", job.prompt))?;
    }
    eprintln!("[{steps} batched steps, {:.2} ms per step]", ms / steps.max(1) as f64);
    Ok(())
}

/// Beam search: prints the best beam's text; every beam's log-probability goes to stderr.
pub async fn beams(
    session: Session,
    tokenizer: &Tokenizer,
    job: &Job,
    width: usize,
    scoring: Scoring,
    ends_at: Ends,
) -> Result<()> {
    let eos = session.config().eos_token_id;
    let prompt_ids = tokenizer.encode(&job.prompt)?;
    if prompt_ids.is_empty() {
        return Err(engine::EngineError::EmptyPrompt);
    }
    let ends = ends_at.tokens(tokenizer, eos)?;
    let settings = BeamSettings { width, max_new_tokens: job.run.max_tokens, scoring, ends };
    let mut search = BeamSearch::start(session, &prompt_ids, settings).await?;
    while search.step().await? {}
    let beams = search.beams();
    let text = |tokens: &[u32]| -> Result<String> {
        // The end-of-text token is not text; a line-break token ending a line is.
        let tokens: Vec<u32> = tokens.iter().copied().filter(|&t| Some(t) != eos).collect();
        let mut stop = StopMatcher::new(&job.run.stop);
        Ok(match stop.push(&tokenizer.decode(&tokens)?) {
            Stopped::No(t) => t + &stop.flush(),
            Stopped::Yes(t) => t,
        })
    };
    for (i, b) in beams.iter().enumerate() {
        eprintln!(
            "[beam {}: logprob {:.4}, score {:.4}] {:?}",
            i + 1,
            b.logprob,
            b.score,
            text(&b.tokens)?
        );
    }
    let c = search.cost();
    let kb = |b: u64| b as f64 / 1024.0;
    eprintln!(
        "[{} steps: {} forward passes, {} tokens decoded, {} submits, {:.1} ms; KV caches copied {} ({:.1} KB), forking every kept child would copy {} ({:.1} KB)]",
        search.steps().len(), c.passes, c.decoded, c.submits, c.wall_ms, c.kv_copies, kb(c.kv_bytes_copied), c.fork_copies, kb(c.fork_bytes)
    );
    let mut out = std::io::stdout().lock();
    let best = beams.first().map(|b| text(&b.tokens)).transpose()?.unwrap_or_default();
    finish(&mut out, &format!("{}{best}", job.prompt))
}

fn print(out: &mut impl Write, text: &str) {
    let _ = write!(out, "{text}");
    let _ = out.flush();
}

fn finish(out: &mut impl Write, text: &str) -> Result<()> {
    let _ = writeln!(out, "{text}");
    Ok(())
}

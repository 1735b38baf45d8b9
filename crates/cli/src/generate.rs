//! `decode-lab generate`: sampling (every pipeline flag, stop strings) or beam
//! search, streaming text to stdout as it becomes final.

use std::io::Write;

use engine::generate::Generator;
use engine::model::{TextStream, Tokenizer};
use engine::sample::{beam_search, Sampler, Settings, StopMatcher, Stopped};
use engine::{Result, Session};

/// What to generate.
pub struct Job {
    pub prompt: String,
    pub max_tokens: usize,
    pub settings: Settings,
    pub seed: u64,
    pub stop: Vec<String>,
}

/// Samples token by token through the pipeline, printing text as it is final.
pub async fn sample(session: Session, tokenizer: &Tokenizer, job: &Job) -> Result<()> {
    let mut sampler = Sampler::new(job.settings.clone(), job.seed)?;
    let eos = session.config().eos_token_id;
    let prompt_ids = tokenizer.encode(&job.prompt)?;
    let mut history = prompt_ids.clone(); // what the penalties look at: prompt + output
    let mut generator = Generator::new(session);
    let (mut logits, crop) = generator.start(&prompt_ids).await?;
    if let Some(c) = crop {
        eprintln!("[prompt cropped to its last {} tokens; {} dropped]", c.kept, c.dropped);
    }
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", job.prompt);
    let (mut stream, mut stop) = (TextStream::default(), StopMatcher::new(&job.stop));
    for _ in 0..job.max_tokens {
        let token = sampler.next(&logits, &history)?.token;
        if Some(token) == eos {
            break;
        }
        history.push(token);
        if let Some(piece) = stream.push(tokenizer, token)? {
            match stop.push(&piece) {
                Stopped::No(text) => print(&mut out, &text),
                Stopped::Yes(text) => return finish(&mut out, &text),
            }
        }
        let (next, crop) = generator.advance(token).await?;
        if let Some(c) = crop {
            eprintln!("\n[context full: kept the last {} tokens, dropped {}]", c.kept, c.dropped);
        }
        logits = next;
    }
    finish(&mut out, &stop.flush())
}

/// Beam search: prints the best beam's text; every beam's log-probability goes to stderr.
pub async fn beams(
    session: Session,
    tokenizer: &Tokenizer,
    job: &Job,
    width: usize,
    length_penalty: f64,
) -> Result<()> {
    let eos = session.config().eos_token_id;
    let prompt_ids = tokenizer.encode(&job.prompt)?;
    if prompt_ids.is_empty() {
        return Err(engine::EngineError::EmptyPrompt);
    }
    let beams =
        beam_search(session, &prompt_ids, width, job.max_tokens, length_penalty, eos).await?;
    let text = |tokens: &[u32]| -> Result<String> {
        let tokens: Vec<u32> = tokens.iter().copied().filter(|&t| Some(t) != eos).collect();
        let mut stop = StopMatcher::new(&job.stop);
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

//! Beam search over the session API: each step runs one decode per beam, and
//! a beam chosen by several candidates is forked (its KV cache copied on the
//! GPU), so no prefix is ever run twice. Correct first; not yet fast.

use crate::error::{EngineError, Result};
use crate::sample::log_softmax;
use crate::session::Session;
use crate::step::Wanted;

/// A finished or surviving hypothesis.
#[derive(Debug, Clone, PartialEq)]
pub struct Beam {
    /// Generated tokens (without the prompt; with the EOS token if it ended on one).
    pub tokens: Vec<u32>,
    /// Sum of the natural-log probabilities of `tokens`.
    pub logprob: f64,
    /// `logprob / len^length_penalty`: what beams are ranked by (as in Hugging Face).
    pub score: f64,
}

struct Live {
    session: Session,
    beam: Beam,
    logits: Vec<f32>,
}

/// The widest beam search accepted: every beam holds its own KV cache, so
/// memory grows with the width (16 × a GPT-2-124M cache is 1.2 GB).
pub const MAX_BEAMS: usize = 16;

/// Length penalties outside this range only overflow the score
/// (`len^penalty` becomes 0 or infinite); useful values lie in −2 … 2.
pub const LENGTH_PENALTY_RANGE: std::ops::RangeInclusive<f64> = -10.0..=10.0;

/// Checks a beam width and length penalty before any work.
pub fn check_beam_settings(width: usize, length_penalty: f64) -> Result<()> {
    if !(1..=MAX_BEAMS).contains(&width) {
        return Err(EngineError::Setting(format!(
            "beam width must be between 1 and {MAX_BEAMS}, got {width}"
        )));
    }
    if !LENGTH_PENALTY_RANGE.contains(&length_penalty) {
        return Err(EngineError::Setting(format!(
            "length penalty must be a number between {} and {}, got {length_penalty:?}",
            LENGTH_PENALTY_RANGE.start(),
            LENGTH_PENALTY_RANGE.end()
        )));
    }
    Ok(())
}

/// Returns up to `width` beams, best first.
pub async fn beam_search(
    mut session: Session,
    prompt: &[u32],
    width: usize,
    max_new_tokens: usize,
    length_penalty: f64,
    eos: Option<u32>,
) -> Result<Vec<Beam>> {
    check_beam_settings(width, length_penalty)?;
    session.rewind(0)?;
    let logits = session.prefill(prompt, Wanted::Last).await?;
    let empty = Beam { tokens: Vec::new(), logprob: 0.0, score: 0.0 };
    let mut live = vec![Live { session, beam: empty, logits }];
    let mut done: Vec<Beam> = Vec::new();
    let room = live[0].session.config().n_positions - prompt.len();
    for _ in 0..max_new_tokens.min(room) {
        // (parent, token, logprob) of every candidate extension, best first.
        let mut candidates = Vec::new();
        for (b, l) in live.iter().enumerate() {
            let lp = log_softmax(&l.logits);
            let mut ids: Vec<usize> = (0..lp.len()).collect();
            ids.sort_unstable_by(|&x, &y| lp[y].total_cmp(&lp[x]).then(x.cmp(&y)));
            for &t in ids.iter().take(width) {
                candidates.push((b, t as u32, l.beam.logprob + lp[t]));
            }
        }
        candidates.sort_by(|a, c| c.2.total_cmp(&a.2));
        let mut next = Vec::new();
        for (parent, token, logprob) in candidates {
            if next.len() == width {
                break;
            }
            let mut tokens = live[parent].beam.tokens.clone();
            tokens.push(token);
            let score = logprob / (tokens.len() as f64).powf(length_penalty);
            let beam = Beam { tokens, logprob, score };
            if Some(token) == eos {
                done.push(beam);
                continue;
            }
            // Every child forks its parent (a GPU-to-GPU cache copy); parents are then dropped.
            next.push((live[parent].session.fork()?, beam));
        }
        let mut stepped = Vec::new();
        for (mut session, beam) in next {
            let logits = session.decode(*beam.tokens.last().expect("a beam has a token")).await?;
            stepped.push(Live { session, beam, logits });
        }
        live = stepped;
        if live.is_empty() || done.len() >= width {
            break;
        }
    }
    done.extend(live.into_iter().map(|l| l.beam));
    done.sort_by(|a, b| b.score.total_cmp(&a.score));
    done.truncate(width);
    Ok(done)
}

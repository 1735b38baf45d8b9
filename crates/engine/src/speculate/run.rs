//! A generation by speculative decoding: each round the draft proposes K
//! tokens one by one; the target checks them all in **one** pass over K + 1
//! rows of its cache (the last emitted token, then the K drafted); the rule
//! in `accept` keeps a prefix of them and gives the target's own token after
//! it; both caches are rewound past the first rejection. Greedy text is the
//! target's own, token for token; sampled text is distributed as the
//! target's, and the same seed gives the same text.
//!
//! State between rounds: both caches hold every token but the last emitted
//! (`pending`), which the next round's passes start with; the draft may lag
//! one more token (the last drafted one, when all K were kept), fed first.

use crate::error::{EngineError, Result};
use crate::run::Job;
use crate::sample::{explain, Explanation, Sampler, Settings};
use crate::session::Session;
use crate::step::Wanted;

use super::accept::{verdict, Verdict};

/// One round: what the draft proposed, how many the target kept, and the
/// target's token after them (its correction, or a bonus when all were kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    pub drafted: Vec<u32>,
    pub accepted: usize,
    pub token: u32,
}

impl Round {
    /// Drafted tokens the target judged: those it kept, and the first it rejected.
    pub fn checked(&self) -> usize {
        (self.accepted + 1).min(self.drafted.len())
    }
}

/// A whole speculative generation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The generated tokens (the prompt's not included).
    pub tokens: Vec<u32>,
    pub rounds: Vec<Round>,
    /// Forward passes of each model (the prompt's prefill included).
    pub target_passes: usize,
    pub draft_passes: usize,
}

impl Outcome {
    /// α: the share of the drafted tokens the target checked that it kept.
    /// A round checks its drafts up to the first rejection; those after it
    /// are never judged, so counting them would bias α low. This is the
    /// estimate of Leviathan et al.'s per-token acceptance rate that their
    /// expected tokens per pass, (1 − α^(K+1)) / (1 − α), takes.
    pub fn acceptance(&self) -> f64 {
        let checked: usize = self.rounds.iter().map(Round::checked).sum();
        let kept: usize = self.rounds.iter().map(|r| r.accepted).sum();
        kept as f64 / checked.max(1) as f64
    }

    /// Tokens generated per target pass over the rounds (each round is one
    /// pass and emits its kept tokens plus the target's own).
    pub fn tokens_per_pass(&self) -> f64 {
        let emitted: usize = self.rounds.iter().map(|r| r.accepted + 1).sum();
        emitted as f64 / self.rounds.len().max(1) as f64
    }
}

/// Generates after `prompt` with `target`, `draft` proposing `k` tokens a
/// round; `job` gives the settings, seed and length (stop strings are
/// refused: a round emits several tokens at once). `on_round` sees each
/// round as it ends and stops the generation by returning false (what was
/// emitted so far is kept). Both sessions must be empty and share a vocabulary.
pub async fn generate(
    target: &mut Session,
    draft: &mut Session,
    prompt: &[u32],
    job: &Job,
    k: usize,
    mut on_round: impl FnMut(&Round) -> bool,
) -> Result<Outcome> {
    check(target, draft, prompt, job, k)?;
    let mut sampler = Sampler::new(job.settings.clone(), job.seed)?;
    let settings = job.settings.clone();
    let (eos, n_positions) = (target.config().eos_token_id, target.config().n_positions);
    let mut history = prompt.to_vec();
    let mut out = Outcome::default();
    // Both caches take the prompt but its last token (`pending`).
    if let Some((_, held)) = prompt.split_last().filter(|(_, held)| !held.is_empty()) {
        target.prefill(held, Wanted::Last).await?;
        draft.prefill(held, Wanted::Last).await?;
        out.target_passes += 1;
        out.draft_passes += 1;
    }
    let mut lag: Vec<u32> = Vec::new(); // tokens the target holds and the draft not yet
    while out.tokens.len() < job.max_tokens {
        // Room: K + 1 rows in the context, and no more tokens than asked.
        let room = n_positions.saturating_sub(history.len());
        let left = job.max_tokens - out.tokens.len();
        let k = k.min(room.saturating_sub(1)).min(left - 1);
        if room == 0 {
            break;
        }
        let pending = *history.last().expect("a prompt has a token");
        // The caches hold n - 1 tokens (the draft maybe one fewer).
        let n = history.len();
        let mut feed = std::mem::take(&mut lag);
        feed.push(pending);
        let (drafted, q) = propose(draft, &feed, &history, k, &settings, &mut sampler).await?;
        out.draft_passes += k.max(1);
        // The target checks them all in one pass: row i predicts the token after row i's.
        let mut rows = vec![pending];
        rows.extend(&drafted);
        let all = target.prefill(&rows, Wanted::All).await?;
        out.target_passes += 1;
        let vocab = target.config().vocab_size;
        let (accepted, token) =
            judge(&all, vocab, &history, &drafted, &q, &settings, &mut sampler)?;
        keep(target, draft, n, accepted, &drafted, &mut lag)?;
        let round = Round { drafted: drafted.clone(), accepted, token };
        let go_on = on_round(&round);
        out.rounds.push(round);
        let emitted = drafted[..accepted].iter().copied().chain([token]);
        let ended = emit(emitted, eos, job.max_tokens, &mut history, &mut out.tokens);
        if ended || !go_on {
            break;
        }
    }
    Ok(out)
}

/// Keeps what the target kept (`accepted` of `drafted` after the caches'
/// `n` tokens): both caches drop the rest, and when every drafted token was
/// kept the draft, which never fed the last, carries it to the next round.
fn keep(
    target: &mut Session,
    draft: &mut Session,
    n: usize,
    accepted: usize,
    drafted: &[u32],
    lag: &mut Vec<u32>,
) -> Result<()> {
    let k = drafted.len();
    target.rewind(n + accepted)?;
    let draft_holds = n + k.saturating_sub(1); // pending and all drafted but the last
    draft.rewind((n + accepted).min(draft_holds))?;
    if accepted == k && k > 0 {
        lag.push(drafted[k - 1]);
    }
    Ok(())
}

/// Appends the round's `emitted` tokens to the text until the model's end
/// token or `max_tokens`; true when the generation ended there.
fn emit(
    emitted: impl Iterator<Item = u32>,
    eos: Option<u32>,
    max_tokens: usize,
    history: &mut Vec<u32>,
    tokens: &mut Vec<u32>,
) -> bool {
    for t in emitted {
        if Some(t) == eos || tokens.len() == max_tokens {
            return true;
        }
        history.push(t);
        tokens.push(t);
    }
    false
}

/// The draft's `k` proposals after `feed` (the tokens its cache lacks,
/// ending with the pending one), drawn from its own distributions (`q`), one
/// draft pass each (one pass when `k` is 0).
async fn propose(
    draft: &mut Session,
    feed: &[u32],
    history: &[u32],
    k: usize,
    settings: &Settings,
    sampler: &mut Sampler,
) -> Result<(Vec<u32>, Vec<Explanation>)> {
    let mut logits = draft.prefill(feed, Wanted::Last).await?;
    let (mut drafted, mut q) = (Vec::with_capacity(k), Vec::with_capacity(k));
    for i in 0..k {
        let seen: Vec<u32> = history.iter().chain(&drafted).copied().collect();
        let e = explain(&logits, &seen, settings)?;
        let d = e.draw(sampler.uniform()).token;
        drafted.push(d);
        q.push(e);
        if i + 1 < k {
            logits = draft.decode(d).await?;
        }
    }
    Ok((drafted, q))
}

/// The target's verdict on the drafted tokens from its rows `all` (k + 1
/// rows of `vocab` logits): how many it keeps, and its own next token — the
/// residual draw at the first rejection, or a free draw when all are kept.
fn judge(
    all: &[f32],
    vocab: usize,
    history: &[u32],
    drafted: &[u32],
    q: &[Explanation],
    settings: &Settings,
    sampler: &mut Sampler,
) -> Result<(usize, u32)> {
    let p = |i: usize, seen: &[u32]| explain(&all[i * vocab..][..vocab], seen, settings);
    for (i, &d) in drafted.iter().enumerate() {
        let seen: Vec<u32> = history.iter().chain(&drafted[..i]).copied().collect();
        let pi = p(i, &seen)?;
        let (u, u2) = (sampler.uniform(), sampler.uniform());
        if let Verdict::Reject(t) = verdict(pi.final_probs(), q[i].final_probs(), d, u, u2) {
            return Ok((i, t));
        }
    }
    // Every drafted token kept: the target's next one comes free.
    let seen: Vec<u32> = history.iter().chain(drafted).copied().collect();
    Ok((drafted.len(), p(drafted.len(), &seen)?.draw(sampler.uniform()).token))
}

/// The settings a speculative run can take.
fn check(target: &Session, draft: &Session, prompt: &[u32], job: &Job, k: usize) -> Result<()> {
    if prompt.is_empty() {
        return Err(EngineError::EmptyPrompt);
    }
    if target.pos() != 0 || draft.pos() != 0 {
        return Err(EngineError::Setting("speculative decoding starts from empty caches".into()));
    }
    let (tv, dv) = (target.config().vocab_size, draft.config().vocab_size);
    if tv != dv {
        return Err(EngineError::Setting(format!(
            "the draft's vocabulary ({dv} tokens) is not the target's ({tv}): a draft must share the tokenizer"
        )));
    }
    if !(1..=16).contains(&k) {
        return Err(EngineError::Setting(format!("--speculate {k}: draft 1 to 16 tokens a round")));
    }
    if !job.stop.is_empty() {
        return Err(EngineError::Setting(
            "stop strings and speculative decoding: a round emits several tokens at once; leave --stop out".into(),
        ));
    }
    if prompt.len() >= target.config().n_positions {
        return Err(EngineError::Setting(
            "the prompt fills the context: no room to generate".into(),
        ));
    }
    Ok(())
}

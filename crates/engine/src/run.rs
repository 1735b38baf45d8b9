//! One generation, token by token: the loop the CLI and the app share, so the
//! same model + prompt + settings + seed gives the same text in both.
//!
//! Data flow per step: logits (for the next token) → pipeline + seeded draw (or
//! a token the user picked) → history, text stream, stop strings → decode step
//! → logits for the token after.

use std::sync::Arc;

use crate::generate::{Crop, Generator};
use crate::model::{TextStream, Tokenizer};
use crate::sample::{explain, Choice, Explanation, Sampler, Settings, StopMatcher, Stopped};
use crate::{EngineError, Result, Session};

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// The model chose its end-of-text token (not appended, not shown).
    Eos,
    /// A stop string appeared (it is not shown).
    Stop,
    /// `max_tokens` tokens were appended.
    MaxTokens,
}

/// What one step did.
#[derive(Debug, Clone)]
pub struct Step {
    /// The token chosen, its final probability and rank when chosen.
    pub choice: Choice,
    /// (vocab_size) the logits it was chosen from, kept so a view can redraw
    /// that step's distribution without running the model.
    pub logits: Vec<f32>,
    /// (history_len) the tokens the processors saw for that choice.
    pub history_len: usize,
    /// What the pipeline made of `logits` under the settings of the choice.
    pub explanation: Arc<Explanation>,
    /// Text that became final with this step (may be empty: a character split
    /// over tokens, or a possible stop string, is held back until known).
    pub text: String,
    /// Set when this step ended the run.
    pub done: Option<Done>,
    /// Set when the context was full and got cropped.
    pub crop: Option<Crop>,
}

/// How a run chooses its tokens and when it ends: what the CLI's flags and
/// the app's controls describe, passed whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The sampling pipeline's settings for the first choice (a caller may
    /// change them between steps with [`Run::set_settings`]).
    pub settings: Settings,
    /// Seeds the draws: same seed + same settings = same text.
    pub seed: u64,
    /// Stop strings: the text ends before the first one that appears.
    pub stop: Vec<String>,
    /// The run ends after this many generated tokens.
    pub max_tokens: usize,
}

/// A generation in progress.
pub struct Run {
    generator: Generator,
    sampler: Sampler,
    /// (prompt + generated) what the penalties look at.
    history: Vec<u32>,
    tail: Tail,
    /// The tokens that end the run: the end-of-text token, and a chat's
    /// end of turn ([`Run::end_at`]).
    ends: Vec<u32>,
    /// (vocab_size) logits for the next token.
    logits: Vec<f32>,
    /// Set when the prompt itself was longer than the context.
    pub prompt_crop: Option<Crop>,
    /// The prompt's prefill while the cache still begins with it: what
    /// [`Run::restart`] goes back to.
    prefilled: Option<Prefilled>,
}

/// What a run's start left: its prompt, the tokens that prefill put in the
/// cache, and the logits it gave for the first choice.
struct Prefilled {
    prompt: Vec<u32>,
    context_len: usize,
    logits: Vec<f32>, // (vocab_size)
}

/// What happens to a chosen token after the model step: the text stream,
/// the stop strings and the token budget (shared with the batched run, so a
/// batch's sequence ends exactly where its run alone would).
pub(crate) struct Tail {
    stream: TextStream,
    stop: StopMatcher,
    generated: usize,
    max_tokens: usize,
}

impl Tail {
    pub(crate) fn new(job: &Job) -> Tail {
        Tail {
            stream: TextStream::default(),
            stop: StopMatcher::new(&job.stop),
            generated: 0,
            max_tokens: job.max_tokens,
        }
    }

    /// `token` appended: the text that became final, and whether the run ended.
    pub(crate) fn push(
        &mut self,
        tokenizer: &Tokenizer,
        token: u32,
    ) -> Result<(String, Option<Done>)> {
        self.generated += 1;
        let mut text = String::new();
        if let Some(piece) = self.stream.push(tokenizer, token)? {
            match self.stop.push(&piece) {
                Stopped::No(t) => text = t,
                Stopped::Yes(t) => return Ok((t, Some(Done::Stop))),
            }
        }
        if self.generated >= self.max_tokens {
            text += &self.stop.flush();
            return Ok((text, Some(Done::MaxTokens)));
        }
        Ok((text, None))
    }

    /// The end-of-text token was chosen: the text held back, now final.
    pub(crate) fn eos(&mut self) -> String {
        self.stop.flush()
    }
}

impl Run {
    /// Encodes `prompt` and prefills it: the run is ready to choose its first token.
    pub async fn start(
        session: Session,
        tokenizer: &Tokenizer,
        prompt: &str,
        job: &Job,
    ) -> Result<Run> {
        let prompt_ids = tokenizer.encode(prompt)?;
        Run::start_ids(session, prompt_ids, job).await
    }

    /// Like [`Run::start`] from token ids (a branch: a prompt plus tokens
    /// already chosen).
    pub async fn start_ids(session: Session, prompt_ids: Vec<u32>, job: &Job) -> Result<Run> {
        let sampler = Sampler::new(job.settings.clone(), job.seed)?;
        if prompt_ids.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let ends = session.config().eos_token_id.into_iter().collect();
        let mut generator = Generator::new(session);
        let (logits, prompt_crop) = generator.start(&prompt_ids).await?;
        let prefilled = Prefilled {
            prompt: prompt_ids.clone(),
            context_len: generator.context().len(),
            logits: logits.clone(),
        };
        Ok(Run {
            generator,
            sampler,
            history: prompt_ids,
            tail: Tail::new(job),
            ends,
            logits,
            prompt_crop,
            prefilled: Some(prefilled),
        })
    }

    /// The run also ends where the model chooses one of `ids`, as at its
    /// end-of-text token (a chat model's end of turn, such as `<|im_end|>`).
    pub fn end_at(&mut self, ids: &[u32]) {
        for id in ids {
            if !self.ends.contains(id) {
                self.ends.push(*id);
            }
        }
    }

    /// The prompt this run can [`restart`](Run::restart) from (`None` once
    /// the context was cropped or the run moved to another session).
    pub fn restartable_prompt(&self) -> Option<&[u32]> {
        self.prefilled.as_ref().map(|p| &p.prompt[..])
    }

    /// Makes this run a new one from its prompt with `job`, without a second
    /// prefill: the cache goes back to the end of the prompt and the prompt's
    /// logits are used again. The numbers are those the prefill gave, which
    /// a fresh [`Run::start`] on the same session would compute again, and
    /// the draws start afresh from `job.seed`: the same text, a prefill
    /// sooner (the KV cache at work across generations). False, with
    /// nothing changed, when it cannot ([`restartable_prompt`](Run::restartable_prompt)).
    pub fn restart(&mut self, job: &Job) -> Result<bool> {
        let Some(p) = &self.prefilled else {
            return Ok(false);
        };
        let sampler = Sampler::new(job.settings.clone(), job.seed)?;
        self.generator.rewind(p.context_len)?;
        let (prompt, logits) = (p.prompt.clone(), p.logits.clone());
        self.begin(sampler, prompt, logits, job);
        Ok(true)
    }

    /// The run begins again from `prompt`, which the cache now ends with:
    /// `job`'s fresh draw stream, nothing generated, `logits` for its first choice.
    fn begin(&mut self, sampler: Sampler, prompt: Vec<u32>, logits: Vec<f32>, job: &Job) {
        (self.sampler, self.history, self.tail) = (sampler, prompt, Tail::new(job));
        self.logits = logits;
    }

    /// Makes this run a new one from `prompt` with `job`, prefilling only
    /// what its cache does not already hold: the cache goes back to the
    /// longest start its tokens share with `prompt` (at least the last
    /// prompt token is prefilled, for its logits) and the rest is prefilled
    /// after it. A chat's next turn: the conversation so far, its reply
    /// included, is in the cache, and only the new user turn is read. The
    /// numbers are those of a fresh [`Run::start`] up to how the engine
    /// computed the kept rows (the CPU engine: the same bits; a GPU's decode
    /// and prefill kernels agree within their tolerance), and the draws
    /// start afresh from `job.seed`. Returns the tokens kept, or `None`
    /// with nothing changed where it cannot: nothing shared, a prompt longer
    /// than the context (a fresh start crops it), or a cache policy that
    /// evicts (a kept token may be gone).
    pub async fn resume(&mut self, prompt: Vec<u32>, job: &Job) -> Result<Option<usize>> {
        let session = self.generator.session();
        let fits = !prompt.is_empty() && prompt.len() <= session.config().n_positions;
        if !fits || session.kv_policy() != crate::kv_policy::KvPolicy::Full {
            return Ok(None);
        }
        let context = self.generator.context();
        let shared = context.iter().zip(&prompt).take_while(|(a, b)| a == b).count();
        let keep = shared.min(prompt.len() - 1);
        if keep == 0 {
            return Ok(None);
        }
        let sampler = Sampler::new(job.settings.clone(), job.seed)?;
        let logits = self.generator.extend(keep, &prompt[keep..]).await?;
        self.prefilled = Some(Prefilled {
            prompt: prompt.clone(),
            context_len: self.generator.context().len(),
            logits: logits.clone(),
        });
        self.prompt_crop = None;
        self.begin(sampler, prompt, logits, job);
        Ok(Some(keep))
    }

    /// The session (stats, KV bytes, backend name).
    pub fn session(&self) -> &Session {
        self.generator.session()
    }

    /// Tokens in the KV cache now.
    pub fn context_len(&self) -> usize {
        self.generator.context().len()
    }

    /// (vocab_size) the logits the next choice will use.
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// (prompt + generated) the token history the processors see.
    pub fn history(&self) -> &[u32] {
        &self.history
    }

    /// Replaces the settings for the following choices (the draw stream goes on).
    pub fn set_settings(&mut self, settings: Settings) -> Result<()> {
        self.sampler.set_settings(settings)
    }

    /// Chooses the next token (drawn, or `forced` when the user picked one),
    /// appends it and runs the model one step.
    pub async fn step(&mut self, tokenizer: &Tokenizer, forced: Option<u32>) -> Result<Step> {
        self.step_showing(tokenizer, forced, |_, _| ()).await
    }

    /// [`step`](Self::step), calling `chosen` with the step (its choice,
    /// logits and history length; no text yet) and the history as soon as
    /// the token is chosen, before the model runs on it: a view shows the
    /// token a model step earlier. Not called for the end-of-text token. If
    /// the model step then fails, the step is undone as `step` undoes it.
    pub async fn step_showing(
        &mut self,
        tokenizer: &Tokenizer,
        forced: Option<u32>,
        chosen: impl FnOnce(&Step, &[u32]),
    ) -> Result<Step> {
        let before = self.sampler.clone();
        let (choice, explanation) = match forced {
            Some(token) => self.forced_choice(token)?,
            None => self.sampler.next_explained(&self.logits, &self.history)?,
        };
        let logits = std::mem::take(&mut self.logits);
        let mut step = Step {
            choice: choice.clone(),
            logits,
            history_len: self.history.len(),
            explanation: Arc::new(explanation),
            text: String::new(),
            done: None,
            crop: None,
        };
        if self.ends.contains(&choice.token) {
            step.text = self.tail.eos();
            step.done = Some(Done::Eos);
            return Ok(step);
        }
        chosen(&step, &self.history);
        // The model step first: if it fails (a lost GPU device), nothing of
        // the run has changed but the draw, which is rolled back, so after
        // `switch_session` the same step is taken again with the same draw.
        let (next, crop) = match self.generator.advance(choice.token).await {
            Ok(advanced) => advanced,
            Err(e) => {
                self.sampler = before;
                self.logits = step.logits;
                return Err(e);
            }
        };
        self.logits = next;
        if crop.is_some() {
            self.prefilled = None; // the prompt's cache is gone
        }
        step.crop = crop;
        self.history.push(choice.token);
        (step.text, step.done) = self.tail.push(tokenizer, choice.token)?;
        Ok(step)
    }

    /// Moves the run onto another session (the CPU engine after the GPU
    /// device was lost): the new one prefills the tokens the old cache held
    /// (the prompt and the text so far, as cropped), and the run goes on with
    /// its own draw stream, so the text continues as if nothing happened.
    pub async fn switch_session(&mut self, session: Session) -> Result<()> {
        let context = self.generator.context().to_vec();
        let mut generator = Generator::new(session);
        let (logits, _) = generator.start(&context).await?;
        self.generator = generator;
        self.logits = logits;
        self.prefilled = None; // its logits came from the other session
        Ok(())
    }

    fn forced_choice(&self, token: u32) -> Result<(Choice, Explanation)> {
        if token as usize >= self.logits.len() {
            return Err(EngineError::TokenOutOfRange { id: token, vocab_size: self.logits.len() });
        }
        let e = explain(&self.logits, &self.history, self.sampler.settings())?;
        let choice =
            Choice { token, prob: e.final_probs()[token as usize], rank: e.rank_of(token) };
        Ok((choice, e))
    }
}

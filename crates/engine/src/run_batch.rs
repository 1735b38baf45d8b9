//! Several sampled continuations of one prompt generated together: the
//! prompt is prefilled once and the session forked, continuation `i` draws
//! with seed `seed + i`, and each round is one batched decode step of the
//! continuations still going ([`Batch`]). Each continuation's text is the
//! text [`Run`](crate::run::Run) gives alone with its seed (a test checks it):
//! same choices, same stop rules, same context crop.

use std::sync::Arc;

use crate::batch::Batch;
use crate::generate::{cropped, Crop, Generator};
use crate::model::Tokenizer;
use crate::run::{Done, Job, Step, Tail};
use crate::sample::Sampler;
use crate::{EngineError, Result, Session, StepStats, Wanted};

/// One continuation's own state.
struct Continuation {
    sampler: Sampler,
    /// (prompt + generated) what the penalties look at.
    history: Vec<u32>,
    /// (pos) the tokens in its cache, for a crop.
    context: Vec<u32>,
    tail: Tail,
    /// (vocab_size) logits for its next token.
    logits: Vec<f32>,
    done: Option<Done>,
}

/// A batched generation in progress.
pub struct BatchRun {
    batch: Batch,
    continuations: Vec<Continuation>,
    eos: Option<u32>,
    /// The cost of the last round's batched step (`None`: it took none).
    last_step: Option<StepStats>,
    /// Set when the prompt itself was longer than the context.
    pub prompt_crop: Option<Crop>,
}

impl BatchRun {
    /// Prefills `prompt_ids` once and forks it `size` ways; continuation
    /// `i` will draw with `job.seed + i`.
    pub async fn start(
        session: Session,
        prompt_ids: Vec<u32>,
        job: &Job,
        size: usize,
    ) -> Result<BatchRun> {
        if size == 0 {
            return Err(EngineError::Batch("a batch needs at least one sequence".into()));
        }
        if prompt_ids.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let eos = session.config().eos_token_id;
        let mut generator = Generator::new(session);
        let (logits, prompt_crop) = generator.start(&prompt_ids).await?;
        let (session, context) = generator.into_parts();
        let mut sessions = Vec::with_capacity(size);
        let mut continuations = Vec::with_capacity(size);
        for i in 0..size {
            sessions.push(session.fork()?);
            continuations.push(Continuation {
                sampler: Sampler::new(job.settings.clone(), job.seed.wrapping_add(i as u64))?,
                history: prompt_ids.clone(),
                context: context.clone(),
                tail: Tail::new(job),
                logits: logits.clone(),
                done: None,
            });
        }
        drop(session);
        Ok(BatchRun {
            batch: Batch::new(sessions)?,
            continuations,
            eos,
            last_step: None,
            prompt_crop,
        })
    }

    /// The batch (its sessions' positions and the last step's cost).
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The cost of the last round's batched step (`None`: every
    /// continuation left in it ended or was cropped alone).
    pub fn last_step(&self) -> Option<StepStats> {
        self.last_step
    }

    /// Whether every continuation has ended.
    pub fn done(&self) -> bool {
        self.continuations.iter().all(|c| c.done.is_some())
    }

    /// One round: every continuation still going chooses its next token; the
    /// ones with room in their context take one batched decode step together
    /// (a full one is cropped and re-prefilled alone, as a run alone would).
    /// Returns what each continuation did (`None`: it had already ended).
    pub async fn step(&mut self, tokenizer: &Tokenizer) -> Result<Vec<Option<Step>>> {
        let n_positions = self.batch.sessions()[0].config().n_positions;
        let mut steps: Vec<Option<Step>> = Vec::with_capacity(self.continuations.len());
        let mut tokens = vec![None; self.continuations.len()];
        self.last_step = None;
        for (i, c) in self.continuations.iter_mut().enumerate() {
            if c.done.is_some() {
                steps.push(None);
                continue;
            }
            let (choice, explanation) = c.sampler.next_explained(&c.logits, &c.history)?;
            let mut step = Step {
                choice: choice.clone(),
                logits: std::mem::take(&mut c.logits),
                history_len: c.history.len(),
                explanation: Arc::new(explanation),
                text: String::new(),
                done: None,
                crop: None,
            };
            if Some(choice.token) == self.eos {
                (step.text, step.done) = (c.tail.eos(), Some(Done::Eos));
            } else if c.context.len() < n_positions {
                tokens[i] = Some(choice.token);
            } else {
                let (context, crop) = cropped(&c.context, choice.token, n_positions);
                self.batch.rewind(i, 0)?;
                c.logits = self.batch.prefill(i, &context, Wanted::Last).await?;
                c.context = context;
                step.crop = Some(crop);
            }
            steps.push(Some(step));
        }
        if tokens.iter().any(Option::is_some) {
            let logits = self.batch.decode(&tokens).await?;
            self.last_step = Some(self.batch.last_stats());
            let vocab = logits.len() / tokens.iter().flatten().count();
            // Row k of the logits is the k-th continuation that took a token.
            let stepped = self.continuations.iter_mut().zip(&tokens);
            let stepped = stepped.filter_map(|(c, t)| t.map(|t| (c, t)));
            for ((c, t), row) in stepped.zip(logits.chunks_exact(vocab)) {
                c.logits = row.to_vec();
                c.context.push(t);
            }
        }
        for (c, step) in self.continuations.iter_mut().zip(&mut steps) {
            let Some(step) = step else { continue };
            if step.done.is_none() {
                c.history.push(step.choice.token);
                (step.text, step.done) = c.tail.push(tokenizer, step.choice.token)?;
            }
            c.done = step.done;
        }
        Ok(steps)
    }
}

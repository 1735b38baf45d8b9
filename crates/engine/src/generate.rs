//! Text-level driving of a session: start from a prompt, then feed each chosen
//! token back. When the context is full the oldest tokens are dropped and the
//! most recent ones re-prefilled; callers are told how many were kept, so a UI
//! can show it.

use crate::error::{EngineError, Result};
use crate::session::Session;
use crate::step::Wanted;

/// What a context crop did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    /// Tokens kept (the most recent ones), re-prefilled at positions `0..kept`.
    pub kept: usize,
    /// Oldest tokens dropped.
    pub dropped: usize,
}

/// A session plus the tokens in its cache.
pub struct Generator {
    session: Session,
    /// (pos) the tokens whose k and v are in the cache, in order.
    context: Vec<u32>,
}

impl Generator {
    /// Wraps a fresh session.
    pub fn new(session: Session) -> Generator {
        Generator { session, context: Vec::new() }
    }

    /// The underlying session (stats, backend name, KV bytes).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Tokens the cache holds now.
    pub fn context(&self) -> &[u32] {
        &self.context
    }

    /// Tokens kept when a full context is cropped (see [`keep`]).
    pub fn keep(&self) -> usize {
        keep(self.session.config().n_positions)
    }

    /// The session and the tokens in its cache.
    pub fn into_parts(self) -> (Session, Vec<u32>) {
        (self.session, self.context)
    }

    /// Prefills `prompt` (its last `n_positions` tokens if longer) and returns
    /// the logits for the next token.
    pub async fn start(&mut self, prompt: &[u32]) -> Result<(Vec<f32>, Option<Crop>)> {
        if prompt.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let n_positions = self.session.config().n_positions;
        let dropped = prompt.len().saturating_sub(n_positions);
        self.session.rewind(0)?;
        self.context = prompt[dropped..].to_vec();
        let logits = self.session.prefill(&self.context, Wanted::Last).await?;
        let crop = (dropped > 0).then_some(Crop { kept: self.context.len(), dropped });
        Ok((logits, crop))
    }

    /// Back to the first `to` tokens of the context (the cache past them is
    /// dropped; nothing is recomputed).
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        self.session.rewind(to)?;
        self.context.truncate(to);
        Ok(())
    }

    /// Back to the first `keep` tokens, then `tokens` prefilled after them in
    /// one pass: the logits for the next token. The caller keeps `keep +
    /// tokens.len()` within the context (no crop here).
    pub async fn extend(&mut self, keep: usize, tokens: &[u32]) -> Result<Vec<f32>> {
        self.rewind(keep)?;
        let logits = self.session.prefill(tokens, Wanted::Last).await?;
        self.context.extend_from_slice(tokens);
        Ok(logits)
    }

    /// Appends `token` and returns the logits after it: one decode step, or a
    /// crop and re-prefill when the context is full.
    pub async fn advance(&mut self, token: u32) -> Result<(Vec<f32>, Option<Crop>)> {
        if self.context.len() < self.session.config().n_positions {
            let logits = self.session.decode(token).await?;
            self.context.push(token);
            return Ok((logits, None));
        }
        // Built aside and kept only once the prefill succeeded: a failed step
        // (a lost GPU device) leaves the context as it was.
        let (context, crop) = cropped(&self.context, token, self.session.config().n_positions);
        self.session.rewind(0)?;
        let logits = self.session.prefill(&context, Wanted::Last).await?;
        self.context = context;
        Ok((logits, Some(crop)))
    }
}

/// Tokens kept when a full context is cropped: half of it, so a crop (one
/// full prefill) happens every `n_positions / 2` tokens, not every token.
pub fn keep(n_positions: usize) -> usize {
    (n_positions / 2).max(1)
}

/// A full `context` with `token` appended, cropped to its last
/// [`keep`] tokens: what is re-prefilled from position 0.
pub fn cropped(context: &[u32], token: u32, n_positions: usize) -> (Vec<u32>, Crop) {
    let mut context = context.to_vec();
    context.push(token);
    let kept = keep(n_positions);
    let dropped = context.len() - kept;
    context.drain(..dropped);
    (context, Crop { kept, dropped })
}

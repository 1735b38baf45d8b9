//! Choosing the next token: the sampling pipeline the app, the CLI and every
//! widget share. Exact over the full vocabulary (no top-50 shortcut) and
//! explainable: [`explain`] returns what each stage did so a UI can draw it.
//!
//! Order (Hugging Face / course-notes convention):
//! processors → temperature → top-k → top-p → min-p → renormalise → draw.
//!
//! Data flow: logits (from a session) + history → [`processors`] → [`pipeline`]
//! stages → final distribution → [`Sampler`] draws with a portable seeded RNG.

mod exp;
pub mod pipeline;
pub mod processors;
mod rank;
pub mod repeat;
mod settings;
mod softmax;
mod stop;

pub use pipeline::{explain, Explanation, Stage, StageKind};
pub use processors::{Effect, Processor};
pub use settings::Settings;
pub use softmax::log_softmax;
pub use stop::{first_stop, StopMatcher, Stopped};

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::Result;

/// A token chosen by [`Sampler::next`], with what the UI shows about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The token id.
    pub token: u32,
    /// Its probability in the final distribution.
    pub prob: f64,
    /// Its rank in the final distribution (1 = most likely).
    pub rank: usize,
}

/// Settings plus a seeded generator: the same seed gives the same draws on
/// every platform (ChaCha20 has a documented, platform-independent stream).
/// `Clone` copies the stream's position: a run rolls a failed step back with it.
#[derive(Clone)]
pub struct Sampler {
    settings: Settings,
    rng: ChaCha20Rng,
}

impl Sampler {
    /// Validates `settings` and seeds the generator.
    pub fn new(settings: Settings, seed: u64) -> Result<Sampler> {
        settings.validate()?;
        Ok(Sampler { settings, rng: ChaCha20Rng::seed_from_u64(seed) })
    }

    /// Replaces the settings; the draw stream carries on where it was.
    pub fn set_settings(&mut self, settings: Settings) -> Result<()> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// The settings in use.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A uniform number in [0, 1) from 53 random bits, identical on every platform.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Runs the pipeline on `logits` given the `history` of tokens so far, and draws.
    pub fn next(&mut self, logits: &[f32], history: &[u32]) -> Result<Choice> {
        self.next_explained(logits, history).map(|(choice, _)| choice)
    }

    /// [`next`](Self::next), with the explanation it drew from: a view can
    /// show it instead of running the pipeline a second time.
    pub fn next_explained(
        &mut self,
        logits: &[f32],
        history: &[u32],
    ) -> Result<(Choice, Explanation)> {
        let explanation = explain(logits, history, &self.settings)?;
        let u = self.uniform();
        Ok((explanation.draw(u), explanation))
    }
}

/// Index of the largest logit; the lowest id wins ties. NaN never wins.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] || logits[best].is_nan() {
            best = i;
        }
    }
    best as u32
}

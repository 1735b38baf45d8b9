//! Every knob of the pipeline, with its "off" value and its valid range. Values
//! arrive from sliders, URLs and the CLI, so `validate` is the API edge: a bad
//! one is a clear error, never a panic or a silent NaN.

use crate::error::{EngineError, Result};

/// Sampling settings. `Default` is plain sampling at temperature 1 with every rule off.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Divides the logits; 0 means greedy (argmax, lowest id on ties).
    pub temperature: f64,
    /// Keep the k most likely tokens; 0 (or ≥ vocabulary) means off.
    pub top_k: i64,
    /// Keep the smallest set of most likely tokens whose mass reaches p; 1 means off.
    pub top_p: f64,
    /// Keep tokens with p ≥ min_p · p_max; 0 means off.
    pub min_p: f64,
    /// CTRL-style: positive logits of seen tokens ÷ penalty, negative ones × penalty; 1 means off.
    pub repetition_penalty: f64,
    /// OpenAI-style: logit −= frequency_penalty · (times the token was seen); 0 means off.
    pub frequency_penalty: f64,
    /// OpenAI-style: logit −= presence_penalty if the token was seen at all; 0 means off.
    pub presence_penalty: f64,
    /// Ban any token that would repeat an n-gram of the history; 0 means off.
    pub no_repeat_ngram: usize,
    /// Added to the logits of the given ids (−inf bans a token).
    pub logit_bias: Vec<(u32, f64)>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            no_repeat_ngram: 0,
            logit_bias: Vec::new(),
        }
    }
}

/// `Debug` prints a float short (`1e308`, not 309 digits) and exactly.
fn bad(what: &str, value: impl std::fmt::Debug, want: &str) -> EngineError {
    EngineError::Setting(format!("{what} must be {want}, got {value:?}"))
}

impl Settings {
    /// Checks every value against its range.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(bad("temperature", self.temperature, "a finite number ≥ 0 (0 = greedy)"));
        }
        if self.top_k < 0 {
            return Err(bad("top-k", self.top_k, "≥ 0 (0 = off)"));
        }
        if !(0.0..=1.0).contains(&self.top_p) {
            return Err(bad("top-p", self.top_p, "between 0 and 1 (1 = off)"));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(bad("min-p", self.min_p, "between 0 and 1 (0 = off)"));
        }
        if !(self.repetition_penalty.is_finite() && self.repetition_penalty > 0.0) {
            return Err(bad(
                "repetition penalty",
                self.repetition_penalty,
                "a number > 0 (1 = off)",
            ));
        }
        for (what, v) in [
            ("frequency penalty", self.frequency_penalty),
            ("presence penalty", self.presence_penalty),
        ] {
            if !v.is_finite() {
                return Err(bad(what, v, "a finite number (0 = off)"));
            }
        }
        if let Some((id, b)) =
            self.logit_bias.iter().find(|(_, b)| b.is_nan() || *b == f64::INFINITY)
        {
            return Err(bad(&format!("logit bias of token {id}"), b, "a number or -inf"));
        }
        Ok(())
    }
}

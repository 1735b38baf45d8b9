//! Logit processors: the first stage, each a pure function of the logits and
//! the tokens generated so far (`history`). Each is off at its neutral value
//! and returns how many tokens' logits it changed (what the page shows).

use crate::sample::Settings;

/// A logit processor, in the order the pipeline runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processor {
    RepetitionPenalty,
    FrequencyPenalty,
    PresencePenalty,
    NoRepeatNgram,
    LogitBias,
}

impl Processor {
    /// Every processor, in pipeline order.
    pub const ALL: [Processor; 5] = [
        Processor::RepetitionPenalty,
        Processor::FrequencyPenalty,
        Processor::PresencePenalty,
        Processor::NoRepeatNgram,
        Processor::LogitBias,
    ];

    /// Its name as the settings, the CLI flags and the URL spell it.
    pub fn name(self) -> &'static str {
        match self {
            Processor::RepetitionPenalty => "repetition_penalty",
            Processor::FrequencyPenalty => "frequency_penalty",
            Processor::PresencePenalty => "presence_penalty",
            Processor::NoRepeatNgram => "no_repeat_ngram",
            Processor::LogitBias => "logit_bias",
        }
    }

    /// Whether `settings` turn it on (it is off at its neutral value).
    pub fn is_on(self, s: &Settings) -> bool {
        match self {
            Processor::RepetitionPenalty => s.repetition_penalty != 1.0,
            Processor::FrequencyPenalty => s.frequency_penalty != 0.0,
            Processor::PresencePenalty => s.presence_penalty != 0.0,
            Processor::NoRepeatNgram => s.no_repeat_ngram != 0,
            Processor::LogitBias => !s.logit_bias.is_empty(),
        }
    }
}

/// What one processor that is on did at one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub processor: Processor,
    /// Tokens whose logit it changed (banned, for no-repeat-n-gram).
    pub changed: usize,
}

/// CTRL-style repetition penalty: for every token already in `history`, a
/// positive logit is divided by `penalty` and a negative one multiplied, so the
/// token always becomes less likely (for penalty > 1).
pub fn repetition_penalty(logits: &mut [f64], history: &[u32], penalty: f64) -> usize {
    if penalty == 1.0 {
        return 0;
    }
    let mut seen = vec![false; logits.len()];
    for &t in history {
        if let Some(s) = seen.get_mut(t as usize) {
            *s = true;
        }
    }
    let mut changed = 0;
    for (l, _) in logits.iter_mut().zip(&seen).filter(|(_, &s)| s) {
        let before = *l;
        *l = if *l > 0.0 { *l / penalty } else { *l * penalty };
        changed += usize::from(*l != before);
    }
    changed
}

/// OpenAI-style penalties: `logit −= frequency · count + presence · (count > 0)`.
pub fn frequency_presence(
    logits: &mut [f64],
    history: &[u32],
    frequency: f64,
    presence: f64,
) -> usize {
    if frequency == 0.0 && presence == 0.0 {
        return 0;
    }
    let mut count = vec![0u32; logits.len()];
    for &t in history {
        if let Some(c) = count.get_mut(t as usize) {
            *c += 1;
        }
    }
    let mut changed = 0;
    for (l, &c) in logits.iter_mut().zip(&count).filter(|(_, &c)| c > 0) {
        let before = *l;
        *l -= frequency * f64::from(c) + presence;
        changed += usize::from(*l != before);
    }
    changed
}

/// Bans (sets to −inf) every token that would complete an `n`-gram already in
/// `history`: the tokens that followed earlier occurrences of the last n − 1 tokens.
pub fn no_repeat_ngram(logits: &mut [f64], history: &[u32], n: usize) -> usize {
    if n == 0 || history.len() < n {
        return 0; // no complete n-gram yet, so nothing can repeat
    }
    let mut banned = 0;
    let prefix = &history[history.len() + 1 - n..]; // the last n − 1 tokens
    for start in 0..=history.len() - n {
        if &history[start..start + n - 1] == prefix {
            if let Some(l) = logits.get_mut(history[start + n - 1] as usize) {
                banned += usize::from(*l != f64::NEG_INFINITY);
                *l = f64::NEG_INFINITY;
            }
        }
    }
    banned
}

/// Adds `bias` to the logits of the given ids (ids outside the vocabulary are ignored).
pub fn logit_bias(logits: &mut [f64], bias: &[(u32, f64)]) -> usize {
    let mut changed = 0;
    for &(id, b) in bias {
        if let Some(l) = logits.get_mut(id as usize) {
            let before = *l;
            *l += b;
            changed += usize::from(*l != before);
        }
    }
    changed
}

//! The course texts' own questions, each a preset a link names
//! (`q1.preset=t05`) and the quiz a link without questions shows. Their
//! answers are computed like any other question's, never written here.

use super::{Kind, On, Question};
use crate::controls::Control;
use crate::widgets::CONFIDENT_PROMPT;

/// One of the course's questions.
pub struct Preset {
    pub name: &'static str,
    kind: Kind,
    ask: &'static str,
    /// `None`: the live model after [`Preset::prompt`].
    logits: Option<&'static [f32]>,
    prompt: &'static str,
    settings: &'static [(Control, f64)],
    vary: Control,
    hint: &'static str,
}

/// The course text's worked example: five logits and their labels.
const LOGITS: &[f32] = &[3.0, 2.0, 1.0, 0.5, 0.1];
const LABELS: &str = "the,a,an,this,some";

/// The course's questions, in the order the course asks them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "t1",
        kind: Kind::Prob,
        ask: "Logits 3, 2, 1, 0.5, 0.1 at T = 1: what is p_top, the probability of the most likely token, to two decimals?",
        logits: Some(LOGITS),
        prompt: "",
        settings: &[(Control::Temperature, 1.0)],
        vary: Control::TopK,
        hint: "softmax: p_i = e^(z_i / T) / Σ_j e^(z_j / T)",
    },
    Preset {
        name: "t05",
        kind: Kind::Prob,
        ask: "The same logits 3, 2, 1, 0.5, 0.1 at T = 0.5: what is p_top now, to two decimals?",
        logits: Some(LOGITS),
        prompt: "",
        settings: &[(Control::Temperature, 0.5)],
        vary: Control::TopK,
        hint: "dividing by T = 0.5 doubles every gap between the logits",
    },
    Preset {
        name: "nucleus",
        kind: Kind::Count,
        ask: "On a confident step (the model after “[Exit”), how many tokens make the nucleus at p = 0.9?",
        logits: None,
        prompt: CONFIDENT_PROMPT,
        settings: &[(Control::TopP, 0.9)],
        vary: Control::TopK,
        hint: "sort the tokens by probability and add them up until the sum reaches 0.9; the token that crosses it is kept",
    },
    Preset {
        name: "greedy",
        kind: Kind::Greedy,
        ask: "Greedy decoding is top-k sampling at k = ?",
        logits: Some(LOGITS),
        prompt: "",
        settings: &[],
        vary: Control::TopK,
        hint: "greedy always takes the single most likely token",
    },
    Preset {
        name: "no-cache",
        kind: Kind::Cost,
        ask: "Without a KV cache, every step re-reads the whole text so far. Generating n tokens then costs on the order of n^x token passes: x = ?",
        logits: None,
        prompt: "",
        settings: &[],
        vary: Control::TopK,
        hint: "step t feeds t tokens through the model: add them up",
    },
];

impl Preset {
    /// The question this preset asks.
    pub fn question(&self) -> Question {
        let on = match self.logits {
            Some(l) => On::Logits {
                logits: l.to_vec(),
                labels: LABELS.split(',').map(str::to_string).collect(),
            },
            None if self.kind == Kind::Cost => On::Logits { logits: vec![0.0], labels: Vec::new() },
            None => On::Prompt(self.prompt.to_string()),
        };
        Question {
            ask: self.ask.to_string(),
            settings: self.settings.to_vec(),
            vary: self.vary,
            hint: self.hint.to_string(),
            preset: Some(self.name),
            ..Question::new(self.kind, on)
        }
    }
}

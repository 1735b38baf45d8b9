//! Questions checked against the live model (`widget=quiz`): each question is
//! defined in the URL under its number (`q1.kind=prob&q1.logits=3,2,1&q1.temperature=0.5`),
//! so a course author writes one by hand or with the page's builder, and the
//! page computes the answer with the sampling pipeline every widget uses
//! ([`answer`]), never from the link. Without any `qN.` parameter the quiz is
//! the course's own questions ([`PRESETS`]).

pub mod answer;
mod presets;

pub use presets::{Preset, PRESETS};

use crate::controls::{echo, Control, Drives};
use crate::logits::parse_logits;
use crate::query::Query;

/// The most questions one link holds.
pub const MAX_QUESTIONS: usize = 20;
/// The longest question text, hint or prompt a link may carry (characters).
pub const MAX_TEXT: usize = 2000;

/// What the learner is asked for; each kind's answer is computed by [`answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The probability of a token after the settings (default: the most likely one).
    Prob,
    /// How many tokens survive every stage (the nucleus or top-k size).
    Count,
    /// Which token is most likely under the settings (after a change).
    Top,
    /// Which value of one setting (`vary`) makes the step greedy.
    Greedy,
    /// The exponent of a generation's cost in tokens, with or without the KV cache.
    Cost,
}

impl Kind {
    /// Every kind, with its `qN.kind=` name.
    pub const ALL: [(Kind, &'static str); 5] = [
        (Kind::Prob, "prob"),
        (Kind::Count, "count"),
        (Kind::Top, "top"),
        (Kind::Greedy, "greedy"),
        (Kind::Cost, "cost"),
    ];

    pub fn name(self) -> &'static str {
        Kind::ALL.iter().find(|(k, _)| *k == self).map(|(_, n)| *n).unwrap_or("prob")
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().find(|(_, n)| *n == name.trim()).map(|(k, _)| *k)
    }

    /// The answer's tolerance when the link does not say (absolute, in the
    /// answer's unit: "to two decimals" for a probability).
    pub fn default_tolerance(self) -> f64 {
        match self {
            Kind::Prob => 0.005,
            Kind::Cost => 0.1,
            Kind::Count | Kind::Top | Kind::Greedy => 0.0,
        }
    }
}

/// Where a question's distribution comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum On {
    /// The author's logits (and labels; a missing label is the index).
    Logits { logits: Vec<f32>, labels: Vec<String> },
    /// The loaded model's next token after this prompt.
    Prompt(String),
}

/// One question, as its link defines it.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub kind: Kind,
    /// The question as shown; empty: worded from the kind and settings.
    pub ask: String,
    pub on: On,
    /// The sampling settings it is asked under (controls that drive a
    /// setting; the others stay off: T = 1, every cut off).
    pub settings: Vec<(Control, f64)>,
    /// `prob`: the token asked about (a label, or the token's text); empty: the most likely.
    pub token: String,
    /// `greedy`: the setting the learner chooses.
    pub vary: Control,
    /// `cost`: whether the KV cache is on.
    pub cache: bool,
    /// Absolute tolerance of a number answer.
    pub tolerance: f64,
    /// Shown on request before answering.
    pub hint: String,
    /// The course preset it was made from, when unchanged.
    pub preset: Option<&'static str>,
}

impl Question {
    /// A question of `kind` on `on` with every setting off.
    pub fn new(kind: Kind, on: On) -> Question {
        Question {
            kind,
            ask: String::new(),
            on,
            settings: Vec::new(),
            token: String::new(),
            vary: Control::TopK,
            cache: false,
            tolerance: kind.default_tolerance(),
            hint: String::new(),
            preset: None,
        }
    }

    /// The settings the pipeline runs with.
    pub fn sampling(&self) -> engine::sample::Settings {
        let mut s = engine::sample::Settings::default();
        for &(control, v) in &self.settings {
            if let Drives::Setting(set) = control.spec().drives {
                set(&mut s, v);
            }
        }
        s
    }
}

impl Question {
    /// The question as the page asks it: the author's text, else worded
    /// from its kind and settings.
    pub fn asked(&self) -> String {
        if !self.ask.is_empty() {
            return self.ask.clone();
        }
        let under = self.setting_words();
        match self.kind {
            Kind::Prob if self.token.is_empty() => {
                format!("With {under}, what is the probability of the most likely token?")
            }
            Kind::Prob => format!("With {under}, what is the probability of “{}”?", self.token),
            Kind::Count => format!("With {under}, how many tokens can still be drawn?"),
            Kind::Top => format!("With {under}, which token is the most likely?"),
            Kind::Greedy => format!(
                "With {under} otherwise, which value of {} makes the step greedy (one token left)?",
                self.vary.spec().label
            ),
            Kind::Cost => format!(
                "{} the KV cache, generating n tokens costs on the order of n^x token passes: x = ?",
                if self.cache { "With" } else { "Without" }
            ),
        }
    }

    /// "temperature 0.5, top-p 0.9", or "every setting off (temperature 1)".
    pub fn setting_words(&self) -> String {
        if self.settings.is_empty() {
            return "every setting off (temperature 1)".into();
        }
        let words: Vec<String> = self
            .settings
            .iter()
            .map(|&(c, v)| format!("{} {v}", c.spec().label.to_lowercase()))
            .collect();
        words.join(", ")
    }
}

/// The controls a question may set (`qN.temperature`, `qN.top_k`, …):
/// derived from the control table, so a new sampling control is one row there.
pub fn setting_controls() -> impl Iterator<Item = Control> {
    Control::all().filter(|c| matches!(c.spec().drives, Drives::Setting(_)))
}

/// The quiz a link asks for, with a notice for each value that could not be
/// taken. No `qN.` parameter (or none that can be read): the course's questions.
pub fn read(query: &Query, notices: &mut Vec<String>) -> Vec<Question> {
    let mut questions = Vec::new();
    let mut any = false;
    for n in 1..=MAX_QUESTIONS {
        if !query_has_question(query, n) {
            continue;
        }
        any = true;
        match read_question(query, n, notices) {
            Ok(q) => questions.push(q),
            Err(why) => notices.push(format!("question {n}: {why}; left out")),
        }
    }
    if query_has_question(query, MAX_QUESTIONS + 1) {
        notices.push(format!("quiz: at most {MAX_QUESTIONS} questions; the rest are left out"));
    }
    // No question (none asked, or none could be read): the course's, so a
    // link and the link written back from it ask the same.
    if questions.is_empty() {
        if any {
            notices.push("quiz: no question could be read; showing the course's questions".into());
        }
        questions = PRESETS.iter().map(Preset::question).collect();
    }
    questions
}

fn query_has_question(query: &Query, n: usize) -> bool {
    let prefix = format!("q{n}.");
    query.names().any(|name| name.starts_with(&prefix))
}

/// Question `n` of a link (the builder reads its form as question 1), or why
/// it cannot be asked.
pub fn read_question(
    query: &Query,
    n: usize,
    notices: &mut Vec<String>,
) -> Result<Question, String> {
    let field = |name: &str| query.get(&format!("q{n}.{name}"));
    let mut q = preset_kind_and_logits(&field, notices)?;
    settings_and_texts(&mut q, &field, notices);
    // A field another kind reads means nothing here (and is not written back).
    if q.kind != Kind::Greedy {
        q.vary = Control::TopK;
    }
    if q.kind != Kind::Cost {
        q.cache = false;
    }
    // Still the preset only when nothing the link said changed it.
    if let Some(name) = q.preset {
        let preset = PRESETS.iter().find(|p| p.name == name).map(Preset::question);
        if preset.as_ref() != Some(&q) {
            q.preset = None;
        }
    }
    Ok(q)
}

/// The question a link's `preset=`, `kind=` and `logits=` (or `prompt=`)
/// make, before any other field changes it.
fn preset_kind_and_logits<'q>(
    field: &impl Fn(&str) -> Option<&'q str>,
    notices: &mut Vec<String>,
) -> Result<Question, String> {
    let base = match field("preset") {
        Some(name) => Some(
            PRESETS
                .iter()
                .find(|p| p.name == name.trim())
                .ok_or_else(|| {
                    let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
                    format!("no preset called {} (there are: {})", echo(name), names.join(", "))
                })?
                .question(),
        ),
        None => None,
    };
    let kind = match field("kind") {
        Some(k) => Kind::from_name(k).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|(_, n)| *n).collect();
            format!("kind {} is not one of {}", echo(k), names.join(", "))
        })?,
        None => base.as_ref().map(|q| q.kind).ok_or("it needs a kind= or a preset=")?,
    };
    let on = match (field("logits"), field("prompt")) {
        (Some(raw), _) => {
            let logits = parse_logits(raw)?;
            let labels = field("labels")
                .map(|l| l.split(',').map(|s| s.trim().to_string()).take(logits.len()).collect())
                .unwrap_or_default();
            On::Logits { logits, labels }
        }
        (None, Some(prompt)) => On::Prompt(text(prompt, "prompt", notices)),
        (None, None) => match &base {
            Some(q) => q.on.clone(),
            None if kind == Kind::Cost => On::Logits { logits: vec![0.0], labels: Vec::new() },
            None => return Err("it needs logits= or prompt=".into()),
        },
    };
    let q = match base {
        Some(b) if b.kind == kind => Question { on, ..b },
        _ => Question::new(kind, on),
    };
    Ok(q)
}

/// The fields a link may set on any question: its settings, texts, the
/// varied control, the cache and the tolerance (a bad value is a notice).
fn settings_and_texts<'q>(
    q: &mut Question,
    field: &impl Fn(&str) -> Option<&'q str>,
    notices: &mut Vec<String>,
) {
    for control in setting_controls() {
        let spec = control.spec();
        let Some(raw) = field(spec.name) else { continue };
        match spec.read(raw) {
            Ok(taken) => {
                if taken.adjusted {
                    notices.push(format!("question: {}", spec.adjustment(raw, taken)));
                }
                q.settings.retain(|(c, _)| *c != control);
                q.settings.push((control, taken.value));
            }
            Err(why) => notices.push(format!("question: {}: {why}", spec.name)),
        }
    }
    q.settings.sort_by_key(|(c, _)| *c as usize);
    if let Some(ask) = field("ask") {
        q.ask = text(ask, "ask", notices);
    }
    if let Some(hint) = field("hint") {
        q.hint = text(hint, "hint", notices);
    }
    if let Some(token) = field("token") {
        q.token = text(token, "token", notices);
    }
    if let Some(raw) = field("vary") {
        match Control::from_name(raw.trim()) {
            Some(c) if setting_controls().any(|s| s == c) => q.vary = c,
            _ => notices.push(format!(
                "question: vary {} is not a sampling setting; {} is asked",
                echo(raw),
                q.vary.spec().name
            )),
        }
    }
    if let Some(raw) = field("cache") {
        match raw.trim() {
            "on" => q.cache = true,
            "off" => q.cache = false,
            _ => notices.push(format!("question: cache {} is not on or off", echo(raw))),
        }
    }
    if let Some(raw) = field("tol") {
        match raw.trim().parse::<f64>() {
            Ok(t) if t.is_finite() && t >= 0.0 => q.tolerance = t,
            _ => notices.push(format!(
                "question: tol {} is not a number ≥ 0; {} is used",
                echo(raw),
                q.tolerance
            )),
        }
    }
}

/// A text field cut to [`MAX_TEXT`] characters, with a notice when cut.
fn text(raw: &str, name: &str, notices: &mut Vec<String>) -> String {
    match raw.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => {
            notices.push(format!("question: {name} is cut to {MAX_TEXT} characters"));
            raw[..cut].to_string()
        }
        None => raw.to_string(),
    }
}

/// The parameters that reproduce `questions` (a preset by its name alone).
pub fn to_params(questions: &[Question]) -> Vec<(String, String)> {
    let mut params = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let mut put =
            |name: &str, value: String| params.push((format!("q{}.{name}", i + 1), value));
        if let Some(name) = q.preset {
            put("preset", name.to_string());
            continue;
        }
        put("kind", q.kind.name().to_string());
        match &q.on {
            On::Logits { logits, labels } => {
                let l: Vec<String> = logits.iter().map(|v| v.to_string()).collect();
                put("logits", l.join(","));
                if !labels.is_empty() {
                    put("labels", labels.join(","));
                }
            }
            On::Prompt(p) => put("prompt", p.clone()),
        }
        for &(control, v) in &q.settings {
            put(control.spec().name, v.to_string());
        }
        for (name, value) in [("ask", &q.ask), ("token", &q.token), ("hint", &q.hint)] {
            if !value.is_empty() {
                put(name, value.clone());
            }
        }
        if q.kind == Kind::Greedy {
            put("vary", q.vary.spec().name.to_string());
        }
        if q.kind == Kind::Cost {
            put("cache", if q.cache { "on" } else { "off" }.to_string());
        }
        if q.tolerance != q.kind.default_tolerance() {
            put("tol", q.tolerance.to_string());
        }
    }
    params
}

#[cfg(test)]
mod tests;

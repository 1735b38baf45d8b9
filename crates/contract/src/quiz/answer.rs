//! A question's answer, computed from the distribution with the same
//! pipeline (`engine::sample::explain`) every widget draws, and the check of
//! a learner's answer against it.

use engine::lessons::cost::kv_projections;
use engine::sample::{explain, Explanation, StageKind};

use super::{Kind, On, Question};
use crate::controls::{Control, Input};

/// The distribution a question is asked on: logits and the tokens seen
/// before (which the penalties read).
pub struct Dist<'a> {
    /// (vocab) raw logits.
    pub logits: &'a [f32],
    pub history: &'a [u32],
    /// A token as the learner reads it (a label, or the decoded text).
    pub text: &'a dyn Fn(u32) -> String,
    /// The token a text names, or why it names none.
    pub resolve: &'a dyn Fn(&str) -> Result<u32, String>,
}

/// The answer the pipeline gives.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    Number(f64),
    Token(u32),
    /// `greedy`: every value on the control's grid that makes the step greedy.
    Values(Vec<f64>),
}

/// A question's answer and how it comes about.
#[derive(Clone, Debug)]
pub struct Solution {
    pub expected: Expected,
    /// The answer as a sentence's end ("0.86", "“ the”", "top_k = 1").
    pub shown: String,
    /// The worked answer, from the numbers of this step.
    pub worked: String,
    /// The tokens the revealed bars mark as the answer.
    pub marked: Vec<u32>,
    /// The step under the question's settings (`None` for `cost`).
    pub explanation: Option<Explanation>,
}

/// What the learner gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Given {
    Number(f64),
    Token(u32),
}

/// Reads a typed number answer: `0.86`, `.86`, `86%` (a percentage), `0,86`.
pub fn parse_number(raw: &str) -> Result<f64, String> {
    let t = raw.trim().replace(',', ".");
    let (t, scale) = match t.strip_suffix('%') {
        Some(p) => (p.trim().to_string(), 0.01),
        None => (t, 1.0),
    };
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v * scale),
        _ if t.is_empty() => Err("type an answer first".into()),
        _ => Err(format!("{} is not a number", crate::controls::echo(raw))),
    }
}

/// The choices a `top` question offers: the six most likely tokens with
/// every setting off, and the answer if it is not among them, in that order.
pub fn choices(q: &Question, d: &Dist) -> Result<Vec<u32>, String> {
    let plain = explain(d.logits, d.history, &Default::default()).map_err(|e| e.to_string())?;
    let mut ids = plain.top(6);
    let top = explain(d.logits, d.history, &q.sampling()).map_err(|e| e.to_string())?.top(1);
    if let Some(&t) = top.first() {
        if !ids.contains(&t) {
            ids.push(t);
        }
    }
    Ok(ids)
}

/// The answer to `q` on `d` (`d` unused by `cost`).
pub fn solve(q: &Question, d: &Dist) -> Result<Solution, String> {
    if q.kind == Kind::Cost {
        return Ok(cost(q.cache));
    }
    let e = explain(d.logits, d.history, &q.sampling()).map_err(|e| e.to_string())?;
    let probs = e.final_probs();
    let top = *e.top(1).first().ok_or("the step has no tokens")?;
    let (expected, shown, worked, marked) = match q.kind {
        Kind::Prob => {
            let token = if q.token.is_empty() { top } else { (d.resolve)(&q.token)? };
            let p = probs[token as usize];
            let worked = prob_worked(q, d, &e, token);
            (Expected::Number(p), format!("{p:.2} ({p:.4})"), worked, vec![token])
        }
        Kind::Count => {
            let kept = e.stages.last().map_or(0, |s| s.kept_count);
            (Expected::Number(kept as f64), kept.to_string(), count_worked(&e), e.top(kept))
        }
        Kind::Top => {
            let plain = explain(d.logits, d.history, &Default::default())
                .map_err(|e| e.to_string())?
                .top(1)
                .first()
                .copied()
                .unwrap_or(top);
            let worked = format!(
                "Under these settings the most likely token is {} (p = {:.4}); with every setting off it is {}.",
                quoted(d, top),
                probs[top as usize],
                quoted(d, plain)
            );
            (Expected::Token(top), quoted(d, top), worked, vec![top])
        }
        Kind::Greedy => {
            let values = greedy_values(q, d)?;
            let name = q.vary.spec().name;
            let shown = format!("{name} = {}", ranges(&values, step(q.vary)));
            let worked = format!(
                "Greedy keeps exactly one token, the most likely ({}). The values of {name} on its slider that leave only that one: {}.",
                quoted(d, top),
                ranges(&values, step(q.vary))
            );
            (Expected::Values(values), shown, worked, vec![top])
        }
        Kind::Cost => unreachable!("answered above"),
    };
    Ok(Solution { expected, shown, worked, marked, explanation: Some(e) })
}

/// Whether `given` answers `q` as `s` says, within the question's tolerance.
pub fn check(q: &Question, s: &Solution, given: Given, d: &Dist) -> bool {
    match (&s.expected, given) {
        (Expected::Number(v), Given::Number(g)) => within(g, *v, q.tolerance),
        (Expected::Token(t), Given::Token(g)) => *t == g,
        // The learner's value runs the pipeline itself: any value that makes
        // the step greedy is right, on the grid or not.
        (Expected::Values(_), Given::Number(g)) => greedy_at(q, d, g).unwrap_or(false),
        _ => false,
    }
}

/// `|g − v| ≤ tol`, with a float's last bits of slack so the edge itself counts.
pub fn within(g: f64, v: f64, tol: f64) -> bool {
    (g - v).abs() <= tol + 1e-9 * v.abs().max(1.0)
}

fn quoted(d: &Dist, id: u32) -> String {
    format!("“{}”", (d.text)(id))
}

fn prob_worked(q: &Question, d: &Dist, e: &Explanation, token: u32) -> String {
    let t = q.sampling().temperature;
    let tempered = e.stage(StageKind::Temperature).probs[token as usize];
    let final_p = e.final_probs()[token as usize];
    let mut s = if t > 0.0 && e.effects.is_empty() && matches!(q.on, On::Logits { .. }) {
        // Small enough to write out: the softmax with its numbers.
        let z = d.logits[token as usize] as f64;
        let num = (z / t).exp();
        let sum: f64 = d.logits.iter().map(|&l| (l as f64 / t).exp()).sum();
        format!(
            "p = e^(z/T) / Σ e^(z_j/T) = e^({z}/{t}) / ({}) = {num:.2} / {sum:.2} = {tempered:.4}",
            d.logits.iter().map(|&l| format!("e^({l}/{t})")).collect::<Vec<_>>().join(" + ")
        )
    } else {
        format!("After temperature {t}, p({}) = {tempered:.4}", quoted(d, token))
    };
    let kept = e.stages.last().map_or(0, |s| s.kept_count);
    let mass: f64 = e.stages.iter().skip(2).map(|s| s.kept_mass).product();
    if (final_p - tempered).abs() > 1e-12 {
        s += &format!(
            "; the cuts keep {kept} tokens holding {mass:.4} of the mass, so renormalised p = {tempered:.4} / {mass:.4} = {final_p:.4}"
        );
    }
    s + "."
}

fn count_worked(e: &Explanation) -> String {
    let kept = e.stages.last().map_or(0, |s| s.kept_count);
    let before = &e.stage(StageKind::Temperature).probs;
    let mut cum = 0.0;
    let sums: Vec<String> = e
        .top(kept.min(8))
        .iter()
        .map(|&id| {
            cum += before[id as usize];
            format!("{cum:.3}")
        })
        .collect();
    let more = if kept > 8 { ", …" } else { "" };
    let cuts: Vec<String> = e
        .stages
        .iter()
        .skip(2)
        .filter(|s| !s.removed.is_empty())
        .map(|s| format!("{} removes {}", s.kind.name(), s.removed.len()))
        .collect();
    format!(
        "Most likely first, the mass adds up {}{more}; {}: {kept} tokens are left.",
        sums.join(", "),
        if cuts.is_empty() { "No stage cuts".to_string() } else { cuts.join(", ") }
    )
}

/// Whether `q`'s step is greedy with its `vary` control at `v` (read as
/// the control reads it: `None` when it is outside the control's range).
fn greedy_at(q: &Question, d: &Dist, v: f64) -> Option<bool> {
    let spec = q.vary.spec();
    // A value the slider could not take (1.5 for k, or outside the range) answers nothing.
    let taken = spec.read(&v.to_string()).ok().filter(|t| !t.adjusted)?;
    let mut asked = q.clone();
    asked.settings.retain(|(c, _)| *c != q.vary);
    asked.settings.push((q.vary, taken.value));
    let e = explain(d.logits, d.history, &asked.sampling()).ok()?;
    Some(e.stages.last().map_or(0, |s| s.kept_count) == 1)
}

fn greedy_values(q: &Question, d: &Dist) -> Result<Vec<f64>, String> {
    let Input::Number { range, .. } = q.vary.spec().input else {
        return Err(format!("{} is not a number", q.vary.spec().name));
    };
    let n = ((range.max - range.min) / range.step).round() as usize;
    Ok((0..=n)
        .map(|i| round_to(range.min + i as f64 * range.step, range.step))
        .filter(|&v| greedy_at(q, d, v) == Some(true))
        .collect())
}

fn step(c: Control) -> f64 {
    match c.spec().input {
        Input::Number { range, .. } => range.step,
        _ => 1.0,
    }
}

fn round_to(v: f64, step: f64) -> f64 {
    let decimals = (-step.log10()).ceil().max(0.0) as i32;
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

/// Grid values as runs: `1`, `0–0.6`, `0, 2–5`; `none` when empty.
pub fn ranges(values: &[f64], step: f64) -> String {
    let mut runs: Vec<(f64, f64)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some((_, end)) if (v - *end - step).abs() < step / 2.0 => *end = v,
            _ => runs.push((v, v)),
        }
    }
    if runs.is_empty() {
        return "none".into();
    }
    let runs: Vec<String> = runs
        .iter()
        .map(|&(a, b)| if a == b { format!("{a}") } else { format!("{a}–{b}") })
        .collect();
    runs.join(", ")
}

/// The exponent of a generation's token passes in its length, from the
/// passes of 256 and 512 new tokens after a one-token prompt.
fn cost(cache: bool) -> Solution {
    let passes = |n: u64| {
        let (with, without) = kv_projections(1, n);
        (if cache { with } else { without }) as f64
    };
    let (a, b) = (passes(256), passes(512));
    let x = (b / a).log2();
    let worked = if cache {
        format!("With the cache each step feeds one new token: n tokens cost about n passes. Doubling n from 256 to 512 takes the passes from {a} to {b}, × {:.3} = 2^{x:.3}.", b / a)
    } else {
        format!("Without the cache step t feeds all t tokens again: n tokens cost 1 + 2 + … + n ≈ n²/2 passes. Doubling n from 256 to 512 takes them from {a} to {b}, × {:.3} = 2^{x:.3}.", b / a)
    };
    Solution {
        expected: Expected::Number(x),
        shown: format!("{x:.2} ({x:.4})"),
        worked,
        marked: Vec::new(),
        explanation: None,
    }
}

//! An author's own logits (`logits=3,2,1,0.5,0.1&labels=the,a,an,this,some`):
//! one set, or two separated by `;` for the top-p widget's switch.

use crate::controls::echo;

/// Parsed `logits=` and `labels=`: one label list per set (possibly empty
/// or shorter than its set).
#[derive(Clone, Debug, PartialEq)]
pub struct LogitSets {
    pub sets: Vec<Vec<f32>>,
    pub labels: Vec<Vec<String>>,
}

/// The most logits a URL may carry (a GPT-2-sized vocabulary fits).
const MAX_LOGITS: usize = 100_000;

/// Parses `3,2,1,-inf`: finite numbers or `-inf` (a banned token).
pub fn parse_logits(raw: &str) -> Result<Vec<f32>, String> {
    let count = raw.split(',').count();
    if count > MAX_LOGITS {
        return Err(format!("logits: {count} values, at most {MAX_LOGITS}"));
    }
    let logits = raw
        .split(',')
        .map(|s| {
            let t = s.trim();
            match t.parse::<f64>() {
                // `-inf`, `-Infinity` (any case): a banned token.
                Ok(f64::NEG_INFINITY) => Ok(f32::NEG_INFINITY),
                Err(_) => Err(format!("logits: {} is not a number", echo(t))),
                // Parsed wide first, so an overflow is called what it is.
                Ok(v) if v.is_finite() && (v as f32).is_infinite() => Err(format!(
                    "logits: {} is too large (logits must lie within ±3.4e38)",
                    echo(t)
                )),
                Ok(v) if !v.is_finite() => Err(format!(
                    "logits: {} is not a finite number (only -inf is allowed: a banned token)",
                    echo(t)
                )),
                Ok(v) => Ok(v as f32),
            }
        })
        .collect::<Result<Vec<f32>, String>>()?;
    if logits.iter().all(|&l| l == f32::NEG_INFINITY) {
        return Err("logits: at least one must be a number (not -inf)".into());
    }
    Ok(logits)
}

/// Parses `logits=` (one set, or two separated by `;` for the top-p switch)
/// and `labels=` (the same shape); labels that do not fit are dropped with a
/// notice.
pub fn parse_sets(
    raw: &str,
    labels: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<LogitSets, String> {
    let mut sets = raw.split(';').map(parse_logits).collect::<Result<Vec<_>, _>>()?;
    if sets.len() > 2 {
        notices.push(format!("logits: {} sets given, the first two are used", sets.len()));
        sets.truncate(2);
    }
    let mut label_sets: Vec<Vec<String>> = labels
        .map(|l| l.split(';').map(|s| s.split(',').map(str::to_string).collect()).collect())
        .unwrap_or_default();
    label_sets.resize(sets.len(), Vec::new());
    for (i, (labels, logits)) in label_sets.iter_mut().zip(&sets).enumerate() {
        if labels.len() > logits.len() {
            notices.push(format!(
                "labels: set {} has {} labels for {} logits; the extra ones are ignored",
                i + 1,
                labels.len(),
                logits.len()
            ));
            labels.truncate(logits.len());
        } else if !labels.is_empty() && labels.len() < logits.len() {
            notices.push(format!(
                "labels: set {} has {} labels for {} logits; the rest are shown as their index",
                i + 1,
                labels.len(),
                logits.len()
            ));
        }
    }
    Ok(LogitSets { sets, labels: label_sets })
}

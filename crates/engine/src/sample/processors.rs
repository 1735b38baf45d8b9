//! Logit processors: the first stage, each a pure function of the logits and
//! the tokens generated so far (`history`). Each is off at its neutral value.

/// CTRL-style repetition penalty: for every token already in `history`, a
/// positive logit is divided by `penalty` and a negative one multiplied, so the
/// token always becomes less likely (for penalty > 1).
pub fn repetition_penalty(logits: &mut [f64], history: &[u32], penalty: f64) {
    if penalty == 1.0 {
        return;
    }
    let mut seen = vec![false; logits.len()];
    for &t in history {
        if let Some(s) = seen.get_mut(t as usize) {
            *s = true;
        }
    }
    for (l, _) in logits.iter_mut().zip(&seen).filter(|(_, &s)| s) {
        *l = if *l > 0.0 { *l / penalty } else { *l * penalty };
    }
}

/// OpenAI-style penalties: `logit −= frequency · count + presence · (count > 0)`.
pub fn frequency_presence(logits: &mut [f64], history: &[u32], frequency: f64, presence: f64) {
    if frequency == 0.0 && presence == 0.0 {
        return;
    }
    let mut count = vec![0u32; logits.len()];
    for &t in history {
        if let Some(c) = count.get_mut(t as usize) {
            *c += 1;
        }
    }
    for (l, &c) in logits.iter_mut().zip(&count).filter(|(_, &c)| c > 0) {
        *l -= frequency * f64::from(c) + presence;
    }
}

/// Bans (sets to −inf) every token that would complete an `n`-gram already in
/// `history`: the tokens that followed earlier occurrences of the last n − 1 tokens.
pub fn no_repeat_ngram(logits: &mut [f64], history: &[u32], n: usize) {
    if n == 0 || history.len() < n {
        return; // no complete n-gram yet, so nothing can repeat
    }
    let prefix = &history[history.len() + 1 - n..]; // the last n − 1 tokens
    for start in 0..=history.len() - n {
        if &history[start..start + n - 1] == prefix {
            if let Some(l) = logits.get_mut(history[start + n - 1] as usize) {
                *l = f64::NEG_INFINITY;
            }
        }
    }
}

/// Adds `bias` to the logits of the given ids (ids outside the vocabulary are ignored).
pub fn logit_bias(logits: &mut [f64], bias: &[(u32, f64)]) {
    for &(id, b) in bias {
        if let Some(l) = logits.get_mut(id as usize) {
            *l += b;
        }
    }
}

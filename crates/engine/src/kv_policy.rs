//! Which tokens a KV cache under a memory budget keeps (issue 34): every
//! token (`full`), the most recent W (`window:W`), the first S and the most
//! recent W as in StreamingLLM (`sinks:S,window:W`), or the H that have
//! received the most attention so far plus the most recent R, as in H2O
//! (`heavy:H,recent:R`).
//!
//! GPT-2's positions are learned and absolute: they are added to the token
//! embedding at the input, never rotated into the keys. A kept token's keys
//! and values therefore never change when others leave, and evicting a token
//! is exactly masking it out of every later attention (the peer check runs
//! `transformers` with that mask).
//!
//! A model with rotary positions (the Llama family) turns each key by its
//! position before caching it. A kept key keeps that turn by default, so
//! evicting is still exactly masking. StreamingLLM instead numbers the kept
//! tokens by their place in the cache (`sinks:S,window:W,positions:cache`):
//! when a token leaves, every kept key after it turns back one position and
//! the newcomer takes the next place, so a query sees the sinks at the
//! distances the model saw in training. For a window alone this changes no
//! distance between a query and a key, which is why only the sinks policy
//! offers it.

//! This module is the rule alone, pure arithmetic: the engines ask it which
//! of the positions they hold stay after each step.

use crate::error::{EngineError, Result};

/// A cache policy, by its `--kv-policy` / `kv_policy=` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvPolicy {
    Full,
    /// The most recent `window` tokens.
    Window {
        window: usize,
    },
    /// The first `sinks` tokens and the most recent `window`, at their
    /// original rotary positions or renumbered by their place in the cache.
    SinksWindow {
        sinks: usize,
        window: usize,
        positions: Positions,
    },
    /// The `heavy` tokens with the most attention received so far (summed
    /// over layers, heads and the queries that saw them), and the most
    /// recent `recent`.
    Heavy {
        heavy: usize,
        recent: usize,
    },
}

/// Which position a kept key is turned by (rotary models only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Positions {
    /// The position it had when it came in: evicting is exactly masking.
    #[default]
    Original,
    /// Its place among the kept tokens (StreamingLLM).
    Cache,
}

impl KvPolicy {
    /// `full`, `window:W`, `sinks:S,window:W[,positions:cache]` or `heavy:H,recent:R`.
    pub fn parse(text: &str) -> Result<KvPolicy> {
        let text = text.trim();
        let bad = |why: &str| {
            EngineError::Setting(format!(
                "kv policy {text:?}: {why} (full, window:W, sinks:S,window:W[,positions:cache] or heavy:H,recent:R)"
            ))
        };
        if text == "full" {
            return Ok(KvPolicy::Full);
        }
        // StreamingLLM's numbering is the one field whose value is a word.
        let (text, positions) = match text.strip_suffix(",positions:cache") {
            Some(rest) => (rest, Positions::Cache),
            None => (text, Positions::Original),
        };
        let mut fields = Vec::new();
        for part in text.split(',') {
            let (key, value) =
                part.split_once(':').ok_or_else(|| bad("a field without a value"))?;
            let value: usize =
                value.trim().parse().map_err(|_| bad("a count that is not a whole number"))?;
            fields.push((key.trim(), value));
        }
        let policy = match fields.as_slice() {
            [("window", w)] => KvPolicy::Window { window: *w },
            [("sinks", s), ("window", w)] => {
                KvPolicy::SinksWindow { sinks: *s, window: *w, positions }
            }
            [("heavy", h), ("recent", r)] => KvPolicy::Heavy { heavy: *h, recent: *r },
            _ => return Err(bad("not a policy")),
        };
        if positions == Positions::Cache && !policy.renumbers() {
            return Err(bad(
                "only the sinks policy numbers its tokens by their place in the cache",
            ));
        }
        if policy.budget() == Some(0) || policy.recent() == 0 {
            return Err(bad("it must keep at least the newest token"));
        }
        Ok(policy)
    }

    /// The text `parse` reads back.
    pub fn name(self) -> String {
        match self {
            KvPolicy::Full => "full".into(),
            KvPolicy::Window { window } => format!("window:{window}"),
            KvPolicy::SinksWindow { sinks, window, positions } => {
                let cache = if positions == Positions::Cache { ",positions:cache" } else { "" };
                format!("sinks:{sinks},window:{window}{cache}")
            }
            KvPolicy::Heavy { heavy, recent } => format!("heavy:{heavy},recent:{recent}"),
        }
    }

    /// Tokens held at most (`None`: every token).
    pub fn budget(self) -> Option<usize> {
        match self {
            KvPolicy::Full => None,
            KvPolicy::Window { window } => Some(window),
            KvPolicy::SinksWindow { sinks, window, .. } => Some(sinks + window),
            KvPolicy::Heavy { heavy, recent } => Some(heavy + recent),
        }
    }

    /// Whether kept keys are turned by their place in the cache rather than
    /// their original position (the engines then turn back, by one position,
    /// the keys after each evicted token).
    pub fn renumbers(self) -> bool {
        matches!(self, KvPolicy::SinksWindow { positions: Positions::Cache, .. })
    }

    /// Refuses a policy `config`'s model cannot follow: numbering tokens by
    /// their place in the cache needs rotary positions.
    pub fn check(self, config: &crate::model::Config) -> Result<()> {
        if self.renumbers() && config.llama().is_none() {
            return Err(EngineError::Setting(format!(
                "kv policy {:?}: positions within the cache need a model with rotary positions; GPT-2 adds each token's position to its embedding at the input, so its kept tokens keep their positions",
                self.name()
            )));
        }
        Ok(())
    }

    /// Whether it ranks tokens by the attention they received (the engines
    /// then sum it as they compute it).
    pub fn ranks_by_mass(self) -> bool {
        matches!(self, KvPolicy::Heavy { .. })
    }

    /// How many of the newest tokens are always kept.
    fn recent(self) -> usize {
        match self {
            KvPolicy::Full => usize::MAX,
            KvPolicy::Window { window } | KvPolicy::SinksWindow { window, .. } => window,
            KvPolicy::Heavy { recent, .. } => recent,
        }
    }

    /// Of the positions `held` (ascending), those kept: `mass[i]` is the
    /// attention `held[i]` has received so far (read only by `heavy`). Ties
    /// in mass keep the earlier position, so every engine keeps the same.
    pub fn keep(self, held: &[usize], mass: &[f32]) -> Vec<usize> {
        let n = held.len();
        let Some(budget) = self.budget() else { return held.to_vec() };
        if n <= budget {
            return held.to_vec();
        }
        let recent = self.recent().min(n);
        let (older, newest) = held.split_at(n - recent);
        let mut kept: Vec<usize> = match self {
            KvPolicy::Full | KvPolicy::Window { .. } => Vec::new(),
            KvPolicy::SinksWindow { sinks, .. } => {
                older.iter().copied().filter(|&p| p < sinks).collect()
            }
            KvPolicy::Heavy { heavy, .. } => {
                let mut order: Vec<usize> = (0..older.len()).collect();
                order.sort_by(|&a, &b| mass[b].total_cmp(&mass[a]).then(a.cmp(&b)));
                let mut top: Vec<usize> = order.into_iter().take(heavy).map(|i| older[i]).collect();
                top.sort_unstable();
                top
            }
        };
        kept.extend_from_slice(newest);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_back_their_names_and_refuse_the_rest() {
        for text in [
            "full",
            "window:4",
            "sinks:4,window:60",
            "sinks:4,window:60,positions:cache",
            "heavy:8,recent:8",
        ] {
            assert_eq!(KvPolicy::parse(text).unwrap().name(), text);
        }
        for bad in [
            "",
            "window",
            "window:x",
            "window:0",
            "sinks:4",
            "heavy:2,recent:0",
            "window:4,sinks:1",
            "window:4,positions:cache",
            "sinks:1,window:4,positions:original",
        ] {
            let e = KvPolicy::parse(bad).unwrap_err().to_string();
            assert!(e.contains("kv policy"), "{bad}: {e}");
        }
    }

    #[test]
    fn each_policy_keeps_what_it_says() {
        let held: Vec<usize> = (0..10).collect();
        let mass = [9.0, 1.0, 5.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0];
        let keep = |text: &str| KvPolicy::parse(text).unwrap().keep(&held, &mass);
        assert_eq!(keep("full"), held);
        assert_eq!(keep("window:3"), [7, 8, 9]);
        assert_eq!(keep("sinks:2,window:3"), [0, 1, 7, 8, 9]);
        // The most attended older tokens (0: 9, 5: 7, then 2 before 3 on a tie), and the newest.
        assert_eq!(keep("heavy:3,recent:2"), [0, 2, 5, 8, 9]);
        // Within the budget nothing leaves.
        assert_eq!(keep("window:10"), held);
        // After an eviction the held positions are no longer 0..n.
        let held = [0, 1, 7, 8, 9, 10];
        let kept = KvPolicy::parse("sinks:2,window:3").unwrap().keep(&held, &[0.0; 6]);
        assert_eq!(kept, [0, 1, 8, 9, 10]);
    }
}

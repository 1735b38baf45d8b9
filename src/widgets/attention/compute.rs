//! The attention weights of the current sequence, read live from the page's
//! engine: a fresh session's prefill that also hands back every layer's
//! weights. "Generate and watch" appends the greedy next token and reads the
//! whole sequence again, so the maps grow as the text does.

use contract::Control;
use engine::sample::argmax;
use engine::{Look, Wanted};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{prompt_ids, Progress};

/// The sequence and its weights `(n_layer, n_head, n, n)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Maps {
    pub tokens: Vec<u32>,
    pub n_layer: usize,
    pub n_head: usize,
    pub weights: Vec<f32>,
}

impl Maps {
    pub fn n(&self) -> usize {
        self.tokens.len()
    }

    /// One head's `(n, n)` map.
    pub fn head(&self, layer: usize, head: usize) -> &[f32] {
        let per = self.n() * self.n();
        &self.weights[(layer * self.n_head + head) * per..][..per]
    }
}

/// `ids` through a fresh session: the maps and the last logits.
async fn read(d: Driver, ids: Vec<u32>) -> Result<(Maps, Vec<f32>), String> {
    let mut session = d.lab.with_value(|l| l.session())?;
    let look = Look { residuals: false, attention: true };
    let seen = session.prefill_inspected(&ids, Wanted::Last, look).await;
    let seen = seen.map_err(|e| e.to_string())?;
    let c = session.config();
    let maps = Maps {
        n_layer: c.n_layer,
        n_head: c.n_head,
        weights: seen.attention.unwrap_or_default(),
        tokens: ids,
    };
    Ok((maps, seen.logits))
}

/// The prompt's maps; with `steps` > 0, then that many greedy tokens, the
/// maps read again after each (up to the context's end).
pub async fn watch(
    d: Driver,
    maps: RwSignal<Maps>,
    progress: RwSignal<Progress>,
    steps: usize,
) -> Result<(), String> {
    let (mut ids, n_positions) = prompt_ids(d, "the maps are of its tokens")?;
    let room = n_positions - ids.len();
    let steps = d.limited(
        Control::MaxTokens,
        steps,
        steps.min(room),
        &format!("the context's room after the prompt, 0–{room} tokens"),
    );
    for step in 0..=steps {
        let (m, logits) = read(d, ids.clone()).await?;
        maps.set(m);
        if step == steps || d.stop_asked() {
            break;
        }
        progress.set(Progress {
            what: format!("token {} of {steps}", step + 1),
            done: step,
            total: steps,
        });
        ids.push(argmax(&logits)); // greedy: the lesson watches, it does not sample
        yield_to_browser().await;
    }
    Ok(())
}

//! The lens grid, read live from the page's engine: one prefill of the
//! prompt that also returns the residual stream after the embedding and
//! after every block, then each (layer, position) row through `ln_f` and the
//! LM head on the CPU twins. The grid fills in layer by layer; the page gets
//! a turn whenever about a frame's work is done (the LM head of a large
//! vocabulary is tens of milliseconds per row).

use engine::lessons::lens;
use engine::{Look, Wanted};
use leptos::prelude::*;

use crate::browser::yield_to_browser;
use crate::driver::Driver;
use crate::widgets::measuring::{prompt_ids, Progress};

/// Most likely tokens kept per cell (what a click shows).
pub const TOP: usize = 10;
/// Work between two turns of the page, in milliseconds.
const SLICE_MS: f64 = 16.0;

/// One cell: the lens's top tokens at one position after one layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// (token, probability), most likely first.
    pub top: Vec<(u32, f64)>,
}

impl Cell {
    pub fn token(&self) -> u32 {
        self.top[0].0
    }
    pub fn p(&self) -> f64 {
        self.top[0].1
    }
}

/// The grid: `layers` rows (0 = the embedding, k = after block k) of one
/// cell per prompt position.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    pub tokens: Vec<u32>,
    pub layers: usize,
    /// Row-major by layer; shorter while filling in.
    pub cells: Vec<Cell>,
}

impl Grid {
    pub fn cell(&self, layer: usize, position: usize) -> Option<&Cell> {
        self.cells.get(layer * self.tokens.len() + position)
    }

    /// The first layer from which position `p`'s top token is the final
    /// layer's and stays so: where the answer forms.
    pub fn settles_at(&self, p: usize) -> Option<usize> {
        let last = self.layers.checked_sub(1)?;
        let answer = self.cell(last, p)?.token();
        let mut at = last;
        while at > 0 && self.cell(at - 1, p)?.token() == answer {
            at -= 1;
        }
        Some(at)
    }

    pub fn done(&self) -> bool {
        self.layers > 0 && self.cells.len() == self.layers * self.tokens.len()
    }
}

/// Reads the prompt through the lens into `grid`.
pub async fn compute(
    d: Driver,
    grid: RwSignal<Grid>,
    progress: RwSignal<Progress>,
) -> Result<(), String> {
    let (ids, _) = prompt_ids(d, "the lens reads it")?;
    let mut session = d.lab.with_value(|l| l.session())?;
    let look = Look { residuals: true, attention: false };
    let seen = session.prefill_inspected(&ids, Wanted::Last, look).await;
    let residuals = seen.map_err(|e| e.to_string())?.residuals.unwrap_or_default();
    drop(session); // its KV cache is not needed: free it before the LM heads run
    let model = d.lab.with_value(|l| l.model.clone());
    let (n, e, layers) = (ids.len(), model.config.n_embd, model.config.n_layer + 1);
    grid.set(Grid { tokens: ids, layers, cells: Vec::with_capacity(layers * n) });
    // Cells reach the grid a slice at a time: one redraw per slice, not per cell.
    let mut fresh = Vec::new();
    let mut slice = web_time::Instant::now();
    for (i, row) in residuals.chunks_exact(e).enumerate() {
        if d.stop_asked() {
            return Ok(());
        }
        fresh.push(Cell { top: lens::top(&lens::logits(&model, row), TOP) });
        if slice.elapsed().as_secs_f64() * 1e3 > SLICE_MS {
            grid.update(|g| g.cells.append(&mut fresh));
            progress.set(Progress {
                what: format!("layer {} of {}", i / n, layers - 1),
                done: i,
                total: layers * n,
            });
            yield_to_browser().await;
            slice = web_time::Instant::now();
        }
    }
    grid.update(|g| g.cells.append(&mut fresh));
    Ok(())
}

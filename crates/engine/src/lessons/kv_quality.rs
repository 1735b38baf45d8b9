//! What a smaller KV cache costs in quality (issue 34): over a held-out
//! text, the next-token distribution of each variant — a cache under a
//! policy, or the model with its K/V heads grouped — against the full cache
//! of the model as loaded, fed the same tokens, position by position: bits
//! per byte of the text, mean KL(full ‖ variant) and how often both pick the
//! same top token. The CLI's `kv-quality` and the `kv-budget` widget both
//! read it.
//!
//! The text is scored in the windows `quality::windows` cuts (a context at
//! most, advancing by half of one), each from an empty cache: a policy's
//! budget binds inside a window exactly as it would in a generation of
//! that length.

use crate::error::Result;
use crate::lessons::quality::{windows, Drift, DriftAcc};
use crate::{Session, Wanted};

/// How far a measurement has got: runs done (one window under one
/// policy, the full cache's included) of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// Scores `n_variants` variants against the reference over `tokens`.
/// `open(None)` gives an empty session of the reference (the full cache),
/// `open(Some(i))` one of variant `i`; `bytes_of` is a token's length in
/// bytes. `progress` is told after every run and stops the measurement by
/// returning false: the figures then cover the windows finished. One
/// [`Drift`] per variant, in order (its `reference_…` figures are the full
/// cache's).
pub async fn measure(
    open: impl Fn(Option<usize>) -> Result<Session>,
    n_variants: usize,
    tokens: &[u32],
    bytes_of: impl Fn(u32) -> usize,
    mut progress: impl FnMut(Progress) -> bool,
) -> Result<Vec<Drift>> {
    if tokens.len() < 2 {
        return Err(crate::EngineError::NoTokens);
    }
    // The first window's reference runs on this session: one cache fewer to allocate.
    let full = open(None)?;
    let (n_ctx, vocab) = (full.config().n_positions, full.config().vocab_size);
    let mut first = Some(full);
    let cut = windows(tokens.len(), n_ctx);
    let total = cut.len() * (n_variants + 1);
    let mut accs = vec![DriftAcc::default(); n_variants];
    let mut done = 0;
    'windows: for w in cut {
        let ids = &tokens[w.start..][..w.len];
        let mut session = match first.take() {
            Some(s) => s,
            None => open(None)?,
        };
        let reference = session.prefill(ids, Wanted::All).await?;
        done += 1;
        if !progress(Progress { done, total }) {
            break;
        }
        let mut window_accs = vec![DriftAcc::default(); n_variants];
        for (i, acc) in window_accs.iter_mut().enumerate() {
            let variant = open(Some(i))?.prefill(ids, Wanted::All).await?;
            // Row r predicts token r + 1 of the window; the last row has no target here.
            for r in w.scored_from..w.len - 1 {
                let rows = r * vocab..(r + 1) * vocab;
                let next = ids[r + 1];
                acc.add(&reference[rows.clone()], &variant[rows], next, bytes_of(next));
            }
            done += 1;
            if !progress(Progress { done, total }) {
                break 'windows; // this window is unfinished for the others: left out
            }
        }
        for (acc, part) in accs.iter_mut().zip(window_accs) {
            acc.merge(part);
        }
    }
    Ok(accs.into_iter().map(DriftAcc::finish).collect())
}

//! The page's engine over the loaded model with its K/V heads pooled into
//! groups (`Model::with_kv_groups`): on WebGPU the pooled weights uploaded
//! with the same kernels, in the CPU worker made from its own copy.

use std::sync::Arc;

use engine::open::Engine;
use leptos::prelude::*;

use crate::driver::Driver;

/// The engine for `groups` K/V groups (0, or the model's own count: the page's engine).
pub async fn grouped(d: Driver, groups: usize) -> Result<Engine, String> {
    let (engine, model) = d.lab.with_value(|l| (l.engine(), l.model.clone()));
    if groups == 0 || groups == model.config.n_kv_head {
        return Ok(engine);
    }
    let pooled = model.with_kv_groups(groups).map_err(|e| e.to_string())?;
    engine.reopen(Arc::new(pooled)).await.map_err(|e| e.to_string())
}

/// Every group count of a model of `n_head` heads, from its own down to 1.
pub fn divisors(n_head: usize) -> Vec<usize> {
    (1..=n_head).rev().filter(|g| n_head.is_multiple_of(*g)).collect()
}

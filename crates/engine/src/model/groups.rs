//! A multi-head checkpoint converted to grouped K/V heads (grouped-query
//! attention, Ainslie et al. 2023): the heads fall into G groups of
//! `n_head / G` neighbours, and each group's K and V projections — weights
//! and biases — become the mean of its heads'. G = n_head changes nothing;
//! G = 1 is multi-query attention.
//!
//! The QKV projection narrows to `q | k | v` with one K and one V head per
//! group (`n_embd + 2 · kv_dim` columns, as a checkpoint trained with GQA
//! has them), so both the cache (one K/V head per group,
//! `Config::n_kv_head`) and the weights a decode step reads shrink, and
//! attention reads query head h's keys from K/V head `h / (n_head / G)`.
//! `transformers` GPT-2 loaded with the pooled weights written back for
//! every head of the group is the peer check.

use crate::error::{EngineError, Result};
use crate::model::Model;
use crate::storage::format::Channels;
use crate::storage::matrix::Matrix;

impl Model {
    /// This model with its K/V heads pooled into `groups` groups.
    pub fn with_kv_groups(&self, groups: usize) -> Result<Model> {
        let c = &self.config;
        if groups == 0 || !c.n_head.is_multiple_of(groups) {
            return Err(EngineError::Setting(format!(
                "--kv-groups {groups}: the K/V groups must divide the model's {} heads",
                c.n_head
            )));
        }
        if c.n_kv_head != c.n_head {
            return Err(EngineError::Setting(format!(
                "the model's K/V heads are already grouped ({} query heads share {} K/V heads): \
                 pooling starts from a model with a K/V head per query head (kv_groups 0 keeps its own)",
                c.n_head, c.n_kv_head
            )));
        }
        let mut model = self.clone();
        if groups == c.n_head {
            return Ok(model);
        }
        let (e, hs, group) = (c.n_embd, c.head_size, c.n_head / groups);
        for layer in &mut model.weights.layers {
            let w = &layer.c_attn_weight;
            let values = w.to_f32(); // (n_embd, 3 * n_embd)
            let pooled: Vec<f32> =
                values.chunks_exact(3 * e).flat_map(|r| pool(r, e, hs, group)).collect();
            let width = pooled.len() / w.rows; // n_embd + 2 · kv_dim
            layer.c_attn_weight = Matrix::new(w.format, w.rows, width, Channels::Cols, &pooled);
            layer.c_attn_bias = pool(&layer.c_attn_bias, e, hs, group);
        }
        model.config.n_kv_head = groups;
        Ok(model)
    }
}

/// One row of the QKV projection (`q | k | v`, 3 · n_embd) narrowed to
/// `q | k | v` with one K and one V head per group: the mean of the group's
/// heads' columns.
fn pool(row: &[f32], n_embd: usize, head_size: usize, group: usize) -> Vec<f32> {
    let mut out = row[..n_embd].to_vec();
    for part in [n_embd, 2 * n_embd] {
        for chunk in row[part..part + n_embd].chunks_exact(group * head_size) {
            let mean =
                |d: usize| (0..group).map(|h| chunk[h * head_size + d]).sum::<f32>() / group as f32;
            out.extend((0..head_size).map(mean));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pool;

    #[test]
    fn pooling_averages_each_groups_k_and_v_and_leaves_q() {
        // n_embd 4: two heads of 2, one group of both.
        let row: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let pooled = pool(&row, 4, 2, 2);
        assert_eq!(&pooled[..4], &[0.0, 1.0, 2.0, 3.0]); // q untouched
        assert_eq!(&pooled[4..6], &[5.0, 6.0]); // k: the mean of heads (4, 5) and (6, 7)
        assert_eq!(&pooled[6..], &[9.0, 10.0]);
    }
}

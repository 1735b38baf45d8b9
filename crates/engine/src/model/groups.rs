//! A multi-head checkpoint converted to grouped K/V heads (grouped-query
//! attention, Ainslie et al. 2023): the heads fall into G groups of
//! `n_head / G` neighbours, and each group's K and V projections — weights
//! and biases — become the mean of its heads'. G = n_head changes nothing;
//! G = 1 is multi-query attention.
//!
//! The pooled K and V are written back for every head of the group, so the
//! QKV projection keeps GPT-2's shape (every kernel, format and checkpoint
//! reader stays as it is, and `transformers` GPT-2 loaded with these very
//! weights is the peer check). What shrinks is the cache: it keeps one K/V
//! head per group (`Config::n_kv_head`; `kv_write` stores the first head of
//! each group), and attention reads query head h's keys from K/V head
//! `h / (n_head / G)`. The projection still computes the repeated columns:
//! a checkpoint trained with GQA would have narrower K/V projections, and its
//! decode would read fewer weight bytes too.

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
            let mut values = w.to_f32(); // (n_embd, 3 * n_embd)
            for row in values.chunks_exact_mut(3 * e) {
                pool(row, e, hs, group);
            }
            let pooled = Matrix::new(w.format, w.rows, w.cols, Channels::Cols, &values);
            layer.c_attn_weight = pooled;
            pool(&mut layer.c_attn_bias, e, hs, group);
        }
        model.config.n_kv_head = groups;
        Ok(model)
    }
}

/// One row of the QKV projection (`q | k | v`, 3 · n_embd): each group's K
/// columns, and its V columns, replaced by their mean over the group's heads.
fn pool(row: &mut [f32], n_embd: usize, head_size: usize, group: usize) {
    for part in [n_embd, 2 * n_embd] {
        let heads = &mut row[part..part + n_embd];
        for chunk in heads.chunks_exact_mut(group * head_size) {
            for d in 0..head_size {
                let sum: f32 = (0..group).map(|h| chunk[h * head_size + d]).sum();
                let mean = sum / group as f32;
                (0..group).for_each(|h| chunk[h * head_size + d] = mean);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pool;

    #[test]
    fn pooling_averages_each_groups_k_and_v_and_leaves_q() {
        // n_embd 4: two heads of 2, one group of both.
        let mut row: Vec<f32> = (0..12).map(|v| v as f32).collect();
        pool(&mut row, 4, 2, 2);
        assert_eq!(&row[..4], &[0.0, 1.0, 2.0, 3.0]); // q untouched
        assert_eq!(&row[4..8], &[5.0, 6.0, 5.0, 6.0]); // k: heads (4, 5) and (6, 7)
        assert_eq!(&row[8..], &[9.0, 10.0, 9.0, 10.0]);
    }
}

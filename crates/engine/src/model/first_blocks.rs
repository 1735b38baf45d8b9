//! The target's own first blocks as a draft (self-speculation): the model
//! cut after `L` blocks, the residual stream read through `ln_f` and the LM
//! head as the logit lens reads it. The same embedding, `ln_f` and head;
//! a cheaper pass, and a cruder guess.

use crate::error::{EngineError, Result};
use crate::model::Model;

impl Model {
    /// This model's first `layers` blocks, then `ln_f` and the LM head.
    pub fn first_blocks(&self, layers: usize) -> Result<Model> {
        let n = self.config.n_layer;
        if layers == 0 || layers >= n {
            return Err(EngineError::Setting(format!(
                "--draft-layers {layers}: a draft of the model's own blocks takes 1 to {} of its {n}",
                n - 1
            )));
        }
        let mut model = self.clone();
        model.weights.layers.truncate(layers);
        model.config.n_layer = layers;
        Ok(model)
    }
}

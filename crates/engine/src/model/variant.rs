//! Another form of a loaded model, made from it on the CPU worker: its
//! matrices in another format (with 8-bit activations or not), fewer K/V
//! groups or only its first blocks. The worker's host and its coworker make
//! the same variant from the same loaded model with this code, so the
//! coworker's part is cut from the very words the host's matrices hold.

use crate::error::{EngineError, Result};
use crate::model::Model;
use crate::storage::format::Format;

/// What a variant changes (each field as the loaded model's where unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub format: Format,
    /// Its int8 or int4 matrices multiplying 8-bit activations.
    pub int8_activations: bool,
    /// K/V head groups.
    pub groups: usize,
    /// Blocks kept, from the first.
    pub layers: usize,
}

impl Variant {
    /// `model` as this variant, in the CPU engine's layout.
    pub fn make(&self, model: &Model) -> Result<Model> {
        let c = &model.config;
        let mut made = model.to_format(self.format)?;
        if self.layers != c.n_layer {
            made = made.first_blocks(self.layers)?;
        }
        if self.groups != c.n_kv_head {
            made = made.with_kv_groups(self.groups)?;
        }
        if self.int8_activations && !made.weights.use_int8_activations() {
            return Err(EngineError::Setting(format!(
                "8-bit activations multiply int8 or int4 weights: these are {}",
                self.format.name()
            )));
        }
        // A converted matrix is row-major (`Matrix::to_format`): the layout
        // again, so that a variant's steps run as fast as the loaded model's.
        made.weights.use_cpu_layout();
        Ok(made)
    }

    /// As four numbers, to cross a buffer shared with the coworker.
    pub fn code(&self) -> [i32; 4] {
        let format = Format::ALL.iter().position(|&f| f == self.format).unwrap_or(0);
        let n = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        [n(format), i32::from(self.int8_activations), n(self.groups), n(self.layers)]
    }

    /// The variant of [`code`](Self::code)'s numbers, if they name one.
    pub fn from_code([format, acts8, groups, layers]: [i32; 4]) -> Option<Variant> {
        Some(Variant {
            format: *Format::ALL.get(usize::try_from(format).ok()?)?,
            int8_activations: acts8 == 1,
            groups: usize::try_from(groups).ok()?,
            layers: usize::try_from(layers).ok()?,
        })
    }
}

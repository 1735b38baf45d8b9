//! Tensors of a safetensors file by their Hugging Face names, checked and
//! converted to f32 (or kept as f16 words).

use std::borrow::Cow;

use safetensors::tensor::TensorInfo;
use safetensors::Dtype;

use super::checkpoint::Checkpoint;
use crate::error::{EngineError, Result};
use crate::model::Config;
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;
use crate::storage::values::{Stored, StoredValues, Values};

/// Looks tensors up by their Hugging Face names and converts them to f32,
/// or (`f16`) keeps f16 matrices as they are stored, or (`pack`) packs each
/// matrix as it is read.
pub(super) struct Reader<'a> {
    /// The checkpoint's files: one, or the shards of a split checkpoint.
    pub st: &'a [Checkpoint<'a>],
    /// Whether the matrices are stored as f16 and held so ([`Reader::all_f16`]):
    /// then [`matrix`](Reader::matrix) reads each straight into its words.
    pub f16: bool,
    /// The format each matrix is packed in straight from its stored values
    /// ([`WeightsChoice::packed_on_read`](super::WeightsChoice::packed_on_read);
    /// f16 for a Llama-family checkpoint held as f16), so that no matrix is
    /// ever held as f32 on the way.
    pub pack: Option<Format>,
    /// What a whole model's class puts before a name: `transformer.`
    /// (`GPT2LMHeadModel`), `model.` (`LlamaForCausalLM`).
    pub prefix: &'static str,
}

impl Reader<'_> {
    /// Whether every weight matrix `config` calls for is stored as f16:
    /// the `embedding`, each block's `per_layer(l)`, the LM head where untied.
    pub(super) fn all_f16(
        &self,
        config: &Config,
        embedding: &str,
        per_layer: impl Fn(usize) -> Vec<String>,
    ) -> bool {
        let mut names = vec![embedding.to_string()];
        names.extend((0..config.n_layer).flat_map(per_layer));
        if !config.tie_word_embeddings {
            names.push("lm_head.weight".into());
        }
        let stored = |name: &str| self.resolve(name).and_then(|n| self.tensor(&n));
        names.iter().all(|n| stored(n).is_some_and(|(_, t)| t.dtype == Dtype::F16))
    }

    /// A weight matrix under `name` (see [`get`](Self::get)), output channels along `channels`.
    pub(super) fn matrix(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        channels: Channels,
    ) -> Result<Matrix> {
        let full = self.resolve(name).ok_or_else(|| self.missing(name))?;
        self.matrix_named(&full, rows, cols, channels)
    }

    /// A weight matrix under exactly `name`: its f16 words kept (`f16`), or
    /// packed straight from its stored values a piece at a time (`pack`: no
    /// f32 copy of it), or its f32 values.
    pub(super) fn matrix_named(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        channels: Channels,
    ) -> Result<Matrix> {
        if self.f16 {
            return self.f16_words(name, rows, cols, channels);
        }
        let values = self.stored(name, &[rows, cols])?;
        Ok(self.hold(rows, cols, channels, &values))
    }

    /// An f16 matrix under exactly `name`, its bytes read straight into its
    /// words ([`Matrix::from_f16_read`]), then checked as [`stored`](Self::stored)
    /// checks values.
    fn f16_words(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        channels: Channels,
    ) -> Result<Matrix> {
        let (file, info) = self.shaped(name, &[rows, cols])?;
        if info.dtype != Dtype::F16 {
            let got = format!("{:?}", info.dtype);
            return Err(EngineError::Dtype { name: name.to_string(), got });
        }
        let matrix = Matrix::from_f16_read(rows, cols, channels, |out| file.data_into(info, out))?;
        let data = bytemuck::cast_slice(matrix.words());
        finite(name, &StoredValues { stored: Stored::F16, data: data[..2 * rows * cols].into() })?;
        Ok(matrix)
    }

    /// A `(rows, cols)` matrix of `values` packed as `pack` says, a piece at
    /// a time (the same words as packing the whole model after reading it as
    /// f32), or its f32 values.
    pub(super) fn hold(
        &self,
        rows: usize,
        cols: usize,
        channels: Channels,
        values: &impl Values,
    ) -> Matrix {
        match self.pack {
            Some(format) => Matrix::packed(format, rows, cols, channels, values),
            None => Matrix::from_f32(rows, cols, channels, values.to_f32()),
        }
    }

    /// `name` as saved by `GPT2Model`, or `transformer.name` as saved by
    /// `GPT2LMHeadModel` (`model.name`: the Llama family's).
    pub(super) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        self.exact(&self.resolve(name).ok_or_else(|| self.missing(name))?, shape)
    }

    /// The values stored under `name` (see [`get`](Self::get)), unread.
    pub(super) fn values(&self, name: &str, shape: &[usize]) -> Result<StoredValues<'_>> {
        self.stored(&self.resolve(name).ok_or_else(|| self.missing(name))?, shape)
    }

    /// The name `name` is stored under, if it is.
    pub(super) fn resolve(&self, name: &str) -> Option<String> {
        let prefixed = format!("{}{name}", self.prefix);
        [name.to_string(), prefixed].into_iter().find(|n| self.tensor(n).is_some())
    }

    /// The tensor stored under exactly `name`, in whichever file holds it.
    fn tensor(&self, name: &str) -> Option<(&Checkpoint<'_>, &TensorInfo)> {
        self.st.iter().find_map(|file| Some((file, file.info(name)?)))
    }

    pub(super) fn exact(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        Ok(self.stored(name, shape)?.to_f32())
    }

    /// The values stored under exactly `name`, checked to have `shape`, a
    /// dtype that widens to f32 and no value that is not finite.
    fn stored(&self, name: &str, shape: &[usize]) -> Result<StoredValues<'_>> {
        let (dtype, data) = self.view(name, shape)?;
        let stored = match dtype {
            Dtype::F32 => Stored::F32,
            Dtype::F16 => Stored::F16,
            Dtype::BF16 => Stored::Bf16,
            other => {
                let got = format!("{other:?}");
                return Err(EngineError::Dtype { name: name.to_string(), got });
            }
        };
        let values = StoredValues { stored, data };
        finite(name, &values)?;
        Ok(values)
    }

    /// The dtype and bytes of the tensor stored under exactly `name`,
    /// checked to have `shape` before its bytes are read.
    fn view(&self, name: &str, shape: &[usize]) -> Result<(Dtype, Cow<'_, [u8]>)> {
        let (file, info) = self.shaped(name, shape)?;
        Ok((info.dtype, file.data(info)?))
    }

    /// The tensor stored under exactly `name`, checked to have `shape`.
    fn shaped(&self, name: &str, shape: &[usize]) -> Result<(&Checkpoint<'_>, &TensorInfo)> {
        let (file, info) = self.tensor(name).ok_or_else(|| self.missing(name))?;
        if info.shape != shape {
            return Err(EngineError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                got: info.shape.clone(),
            });
        }
        Ok((file, info))
    }
}

impl Reader<'_> {
    pub(super) fn missing(&self, name: &str) -> EngineError {
        EngineError::MissingTensor { name: name.to_string(), prefix: self.prefix }
    }
}

/// An error naming the first value of tensor `name` that is not finite, if any.
fn finite(name: &str, values: &StoredValues) -> Result<()> {
    match values.first_non_finite() {
        Some((index, value)) => {
            Err(EngineError::NonFinite { name: name.to_string(), index, value })
        }
        None => Ok(()),
    }
}

//! `model.safetensors` → [`Weights`]. Second stop of the data flow: every
//! tensor is checked for presence, shape, dtype and finiteness here, so the
//! forward passes can trust their inputs. GPT-2's tensors are read here, the
//! Llama family's in `weights_llama.rs`.

use super::checkpoint::{Checkpoint, FileBytes};
use super::reader::Reader;
use super::weights::{LayerWeights, Weights};
use super::weights_llama;
use crate::error::Result;
use crate::model::{Config, WeightsChoice};
use crate::storage::format::Channels;

impl Weights {
    /// Reads and validates every tensor `config` calls for. Where `weights`
    /// keeps f16 ([`WeightsChoice::keeps_f16`]), a checkpoint whose every
    /// matrix is stored as f16 keeps them so, word for word (the same words as
    /// packing their f32 values as f16), without an f32 copy of them: half the
    /// memory while loading a 124M model in a page. Where it names a format
    /// packed on read ([`WeightsChoice::packed_on_read`]), each matrix is
    /// packed as soon as it is read. Otherwise, and for the vectors, values
    /// are read as f32.
    pub fn from_safetensors(
        bytes: &[u8],
        config: &Config,
        weights: WeightsChoice,
    ) -> Result<Weights> {
        Weights::from_files(&[&bytes], config, weights)
    }

    /// [`from_safetensors`](Self::from_safetensors) over a checkpoint in one
    /// file or split into several (`model-00001-of-00002.safetensors` …),
    /// wherever their bytes are: every header is checked first, then each
    /// tensor is read from the file that holds it as it is needed.
    pub fn from_files(
        files: &[&dyn FileBytes],
        config: &Config,
        weights: WeightsChoice,
    ) -> Result<Weights> {
        let st = files.iter().map(|&bytes| Checkpoint::open(bytes)).collect::<Result<Vec<_>>>()?;
        let (keep_f16, pack) = (weights.keeps_f16(), weights.packed_on_read());
        if config.llama().is_some() {
            let t = Reader { st: &st, f16: false, pack, prefix: "model." };
            return weights_llama::read(&t, config, keep_f16);
        }
        let mut t = Reader { st: &st, f16: false, pack, prefix: "transformer." };
        let blocks = |l: usize| LayerWeights::MATRIX_NAMES.map(|n| format!("h.{l}.{n}")).to_vec();
        t.f16 = keep_f16 && t.all_f16(config, "wte.weight", blocks);
        let (e, i, v) = (config.n_embd, config.n_inner, config.vocab_size);
        let mut layers = Vec::with_capacity(config.n_layer);
        for l in 0..config.n_layer {
            let p = |s: &str| format!("h.{l}.{s}");
            let [c_attn, attn_proj, c_fc, mlp_proj] = LayerWeights::MATRIX_NAMES.map(p);
            layers.push(LayerWeights {
                ln_1_weight: t.get(&p("ln_1.weight"), &[e])?,
                ln_1_bias: t.get(&p("ln_1.bias"), &[e])?,
                c_attn_weight: t.matrix(&c_attn, e, 3 * e, Channels::Cols)?,
                c_attn_bias: t.get(&p("attn.c_attn.bias"), &[3 * e])?,
                attn_proj_weight: t.matrix(&attn_proj, e, e, Channels::Cols)?,
                attn_proj_bias: t.get(&p("attn.c_proj.bias"), &[e])?,
                ln_2_weight: t.get(&p("ln_2.weight"), &[e])?,
                ln_2_bias: t.get(&p("ln_2.bias"), &[e])?,
                c_fc_weight: t.matrix(&c_fc, e, i, Channels::Cols)?,
                c_fc_bias: t.get(&p("mlp.c_fc.bias"), &[i])?,
                mlp_proj_weight: t.matrix(&mlp_proj, i, e, Channels::Cols)?,
                mlp_proj_bias: t.get(&p("mlp.c_proj.bias"), &[e])?,
            });
        }
        let lm_head = match config.tie_word_embeddings {
            true => None,
            false => Some(t.matrix_named("lm_head.weight", v, e, Channels::Rows)?),
        };
        Ok(Weights {
            wte: t.matrix("wte.weight", v, e, Channels::Rows)?,
            wpe: t.get("wpe.weight", &[config.n_positions, e])?,
            layers,
            ln_f_weight: t.get("ln_f.weight", &[e])?,
            ln_f_bias: t.get("ln_f.bias", &[e])?,
            lm_head,
        })
    }
}

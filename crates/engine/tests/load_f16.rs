//! An f16 checkpoint read straight into f16 words (the page's and the CPU
//! worker's load when they hold f16) against reading it as f32 and packing:
//! the same words, the same vectors, the same refusals.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;

use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::model::{Model, Weights, WeightsChoice};
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;
use safetensors::SafeTensors;

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden").join(name)
}

fn fixture(name: &str) -> (String, Vec<u8>) {
    let dir = fixture_dir(name);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    (config, std::fs::read(dir.join("model.safetensors")).unwrap())
}

fn same_weights(a: &Weights, b: &Weights) {
    for ((name, x), (_, y)) in a.named_matrices().into_iter().zip(b.named_matrices()) {
        assert_eq!(x, y, "{name}");
    }
    assert_eq!(a.wpe, b.wpe);
    assert_eq!((&a.ln_f_weight, &a.ln_f_bias), (&b.ln_f_weight, &b.ln_f_bias));
    for (la, lb) in a.layers.iter().zip(&b.layers) {
        let v = |l: &decode_lab_engine::model::LayerWeights| {
            [&l.ln_1_weight, &l.ln_1_bias, &l.c_attn_bias, &l.attn_proj_bias]
                .into_iter()
                .chain([&l.ln_2_weight, &l.ln_2_bias, &l.c_fc_bias, &l.mlp_proj_bias])
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(v(la), v(lb));
    }
}

#[test]
fn an_f16_checkpoint_is_read_into_the_words_packing_its_f32_values_gives() {
    let (config, bytes) = fixture("untied_f16");
    let direct = Model::from_bytes_f16(&config, &bytes).unwrap();
    let packed = Model::from_bytes(&config, &bytes).unwrap().to_format(Format::F16).unwrap();
    assert_eq!(direct.format(), Format::F16);
    assert!(direct.weights.lm_head.is_some(), "the untied head is read the same way");
    same_weights(&direct.weights, &packed.weights);
    // Held as f16, it is exactly f16 (weights=auto keeps it so), without a packed copy.
    assert!(direct.exact_in(Format::F16));
}

/// The CLI's and the CPU worker's load (`from_dir_as`, `from_bytes_as`): for
/// every choice, the model parsing as f32 and packing gives, whichever way
/// it was read (f16 words kept, or each matrix packed as it is read:
/// `WeightsChoice::packed_on_read`, straight from the stored f16, bf16 or
/// f32 values a piece at a time), for GPT-2 and the Llama family (whose
/// blocks are transposed and reordered before they are packed).
#[test]
fn every_weights_choice_holds_what_parsing_as_f32_and_packing_gives() {
    for name in ["untied_f16", "tiny_odd", "llama_gqa", "mistral_f16", "qwen2_bf16"] {
        let (config, bytes) = fixture(name);
        let f32_model = Model::from_bytes(&config, &bytes).unwrap();
        let choices = Format::ALL.map(WeightsChoice::Exactly);
        for choice in [WeightsChoice::Auto].into_iter().chain(choices) {
            let format = choice.format(&f32_model);
            let want = f32_model.to_format(format).unwrap();
            let got = Model::from_dir_as(&fixture_dir(name), choice).unwrap();
            assert_eq!(got.format(), format, "{name} {choice:?}");
            same_weights(&got.weights, &want.weights);
            let got = Model::from_bytes_as(&config, &bytes, choice).unwrap();
            same_weights(&got.weights, &want.weights);
        }
    }
}

#[test]
fn a_checkpoint_with_f32_matrices_is_read_as_f32_either_way() {
    let (config, bytes) = fixture("tiny_odd");
    let direct = Model::from_bytes_f16(&config, &bytes).unwrap();
    assert_eq!(direct.format(), Format::F32);
    same_weights(&direct.weights, &Model::from_bytes(&config, &bytes).unwrap().weights);
}

#[test]
fn a_non_finite_f16_weight_is_refused_the_same_way() {
    let (config, mut bytes) = fixture("untied_f16");
    let (n, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let name = meta.info("h.0.mlp.c_fc.weight").map(|_| "h.0.mlp.c_fc.weight");
    let name = name.unwrap_or("transformer.h.0.mlp.c_fc.weight");
    let start = 8 + n + meta.info(name).unwrap().data_offsets.0;
    for (bits, shown) in [(0x7c00u16, "inf"), (0xfe00, "NaN")] {
        bytes[start + 2 * 5..][..2].copy_from_slice(&bits.to_le_bytes());
        let direct = Model::from_bytes_f16(&config, &bytes).unwrap_err().to_string();
        let widened = Model::from_bytes(&config, &bytes).unwrap_err().to_string();
        assert_eq!(direct, widened);
        // packed on read: checked from the bits, never widened whole
        for format in [Format::Int4, Format::Int8, Format::Bf16] {
            let packed = Model::from_bytes_as(&config, &bytes, WeightsChoice::Exactly(format));
            assert_eq!(packed.unwrap_err().to_string(), widened, "{format:?}");
        }
        assert!(
            direct.contains(name) && direct.contains('5') && direct.contains(shown),
            "{direct}"
        );
    }
}

#[test]
fn f16_words_from_bytes_equal_packing_at_odd_sizes() {
    for (rows, cols) in [(1, 1), (3, 3), (1, 63), (5, 65), (2, 1757)] {
        let values =
            Matrix::new(Format::F16, rows, cols, Channels::Cols, &cases::random(rows * cols, 7))
                .to_f32();
        let le: Vec<u8> =
            values.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
        let packed = Matrix::new(Format::F16, rows, cols, Channels::Cols, &values);
        assert_eq!(Matrix::from_f16_le(rows, cols, Channels::Cols, &le), packed, "{rows}×{cols}");
    }
}

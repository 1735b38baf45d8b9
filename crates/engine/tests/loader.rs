//! Bad model files give a clear error naming what is wrong — never a panic.
#![cfg(not(target_arch = "wasm32"))] // native test: wasm has tests/browser.rs

mod common;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use decode_lab_engine::model::{Checkpoint, Config, FileBytes, Model, OnDisk, WeightsChoice};
use decode_lab_engine::EngineError;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

/// A valid config for a 1-layer model with n_embd 4, 2 heads, vocab 5, 3 positions.
const CONFIG: &str = r#"{"n_layer":1,"n_head":2,"n_embd":4,"n_positions":3,"vocab_size":5,"activation_function":"gelu_new"}"#;

/// The tensors of that model as (name, shape), Hub-style names.
fn tensor_specs() -> Vec<(String, Vec<usize>)> {
    common::gpt2_shapes(1, 4, 5, 3)
}

/// Serialises `specs` as f32 (0.5 everywhere), letting `edit` change a tensor's bytes.
fn safetensors_file(
    specs: &[(String, Vec<usize>)],
    dtype: Dtype,
    edit: impl Fn(&str, &mut Vec<u8>),
) -> Vec<u8> {
    let width = dtype.bitsize() / 8;
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = specs
        .iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let mut bytes = match dtype {
                Dtype::F16 => half::f16::from_f32(0.5).to_le_bytes().repeat(n),
                _ => 0.5f32.to_le_bytes().repeat(n * width / 4),
            };
            edit(name, &mut bytes);
            (name.clone(), shape.clone(), bytes)
        })
        .collect();
    let views: HashMap<String, TensorView> = data
        .iter()
        .map(|(n, s, b)| (n.clone(), TensorView::new(dtype, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize(views, None).unwrap()
}

fn valid() -> Vec<u8> {
    safetensors_file(&tensor_specs(), Dtype::F32, |_, _| {})
}

fn load_err(config: &str, weights: &[u8]) -> String {
    Model::from_bytes(config, weights).expect_err("must be refused").to_string()
}

#[test]
fn a_valid_minimal_model_loads_with_or_without_prefix() {
    assert!(Model::from_bytes(CONFIG, &valid()).is_ok());
    let prefixed: Vec<_> =
        tensor_specs().into_iter().map(|(n, s)| (format!("transformer.{n}"), s)).collect();
    assert!(Model::from_bytes(CONFIG, &safetensors_file(&prefixed, Dtype::F32, |_, _| {})).is_ok());
    let f16 = Model::from_bytes(CONFIG, &safetensors_file(&tensor_specs(), Dtype::F16, |_, _| {}))
        .unwrap();
    assert_eq!(f16.weights.wte.get(0), 0.5);
}

#[test]
fn truncated_and_corrupt_files_are_refused() {
    let good = valid();
    for cut in [0, 4, 8, 20, good.len() / 2, good.len() - 1] {
        let e = load_err(CONFIG, &good[..cut]);
        assert!(e.contains("not a valid safetensors file"), "cut at {cut}: {e}");
    }
    let mut garbage = good.clone();
    garbage[8..40].copy_from_slice(&[b'!'; 32]);
    assert!(load_err(CONFIG, &garbage).contains("not a valid safetensors file"));
    // A header length far larger than the file.
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    assert!(load_err(CONFIG, &huge).contains("not a valid safetensors file"));
}

#[test]
fn missing_tensor_is_named() {
    let specs: Vec<_> =
        tensor_specs().into_iter().filter(|(n, _)| n != "h.0.mlp.c_fc.bias").collect();
    let e = load_err(CONFIG, &safetensors_file(&specs, Dtype::F32, |_, _| {}));
    assert!(e.contains("no tensor `h.0.mlp.c_fc.bias`"), "{e}");
}

#[test]
fn wrong_shape_names_tensor_expected_and_found() {
    let specs: Vec<_> = tensor_specs()
        .into_iter()
        .map(|(n, s)| if n == "h.0.attn.c_attn.weight" { (n, vec![12, 4]) } else { (n, s) })
        .collect();
    let e = load_err(CONFIG, &safetensors_file(&specs, Dtype::F32, |_, _| {}));
    assert!(e.contains("`h.0.attn.c_attn.weight` has shape [12, 4], expected [4, 12]"), "{e}");
}

#[test]
fn unsupported_dtype_is_named() {
    let e = load_err(CONFIG, &safetensors_file(&tensor_specs(), Dtype::F64, |_, _| {}));
    assert!(e.contains("dtype F64, expected F32, F16 or BF16"), "{e}");
}

#[test]
fn nan_and_inf_weights_are_refused() {
    for (bad, label) in [(f32::NAN, "NaN"), (f32::INFINITY, "inf")] {
        let file = safetensors_file(&tensor_specs(), Dtype::F32, |name, bytes| {
            if name == "h.0.ln_2.weight" {
                bytes[8..12].copy_from_slice(&bad.to_le_bytes());
            }
        });
        let e = load_err(CONFIG, &file);
        assert!(
            e.contains("`h.0.ln_2.weight` contains a non-finite value") && e.contains("index 2"),
            "{label}: {e}"
        );
    }
}

#[test]
fn untied_model_needs_lm_head() {
    let config = CONFIG.replace('}', r#","tie_word_embeddings":false}"#);
    assert!(load_err(&config, &valid()).contains("no tensor `lm_head.weight`"));
}

#[test]
fn absurd_configs_are_refused_with_the_field_named() {
    let cases = [
        ("not json", "not valid JSON"),
        (r#"{"n_head":2,"n_embd":4,"n_positions":3,"vocab_size":5}"#, "missing field `n_layer`"),
        (r#"{"n_layer":1,"n_head":0,"n_embd":4,"n_positions":3,"vocab_size":5}"#, "`n_head` is 0"),
        (
            r#"{"n_layer":1,"n_head":3,"n_embd":4,"n_positions":3,"vocab_size":5}"#,
            "not a multiple of `n_head`",
        ),
        (
            r#"{"n_layer":1,"n_head":2,"n_embd":4,"n_positions":-3,"vocab_size":5}"#,
            "`n_positions` is -3",
        ),
        (
            r#"{"n_layer":1,"n_head":2,"n_embd":4,"n_positions":3,"vocab_size":99999999999}"#,
            "`vocab_size` is 99999999999",
        ),
        (
            r#"{"n_layer":1,"n_head":2,"n_embd":4,"n_positions":3,"vocab_size":5,"activation_function":"relu"}"#,
            "unsupported `activation_function` \"relu\"",
        ),
        (
            r#"{"n_layer":1,"n_head":2,"n_embd":4,"n_positions":3,"vocab_size":5,"layer_norm_epsilon":0}"#,
            "`layer_norm_epsilon` is 0",
        ),
    ];
    for (json, want) in cases {
        let e = Config::from_json(json).expect_err(json).to_string();
        assert!(e.contains(want), "{json}: {e}");
    }
}

#[test]
fn missing_files_name_the_path() {
    let e = Model::from_dir(std::path::Path::new("/nonexistent/model")).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/model/config.json"), "{e}");
}

#[test]
fn eos_beyond_the_vocabulary_means_none() {
    let c = Config::from_json(&CONFIG.replace('}', r#","eos_token_id":50256}"#)).unwrap();
    assert_eq!(c.eos_token_id, None);
    let c = Config::from_json(&CONFIG.replace('}', r#","eos_token_id":4}"#)).unwrap();
    assert_eq!(c.eos_token_id, Some(4));
}

/// A directory with only PyTorch's pickle file gets the reason and the way
/// out, as does a shard index that names no file; one with no tokenizer names the files it looked for; GPT-2's
/// original `vocab.json` + `merges.txt` pair is a tokenizer.
#[test]
fn pytorch_only_sharded_and_tokenizer_files_are_explained() {
    use decode_lab_engine::model::Tokenizer;
    let dir = std::env::temp_dir().join(format!("decode-lab-pt-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), CONFIG).unwrap();
    std::fs::write(dir.join("pytorch_model.bin"), b"PK\x03\x04 pickle").unwrap();
    let e = Model::from_dir(&dir).unwrap_err().to_string();
    assert!(
        e.contains("pytorch_model.bin but no model.safetensors") && e.contains("save_pretrained"),
        "{e}"
    );
    std::fs::write(dir.join("model.safetensors.index.json"), r#"{"weight_map": {}}"#).unwrap();
    let e = Model::from_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("model.safetensors.index.json: its `weight_map` names no file"), "{e}");
    let e = Tokenizer::from_dir(&dir).expect_err("no tokenizer").to_string();
    assert!(e.contains("tokenizer.json, or vocab.json and merges.txt"), "{e}");
    std::fs::write(dir.join("vocab.json"), r#"{"a": 0, "b": 1, "ab": 2}"#).unwrap();
    std::fs::write(dir.join("merges.txt"), "#version: 0.2\na b\n").unwrap();
    let t = Tokenizer::from_dir(&dir).expect("vocab.json + merges.txt");
    assert_eq!(t.encode("ab").unwrap(), [2]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file's bytes that say which ranges were read (into a buffer of their
/// own, or straight into the caller's memory), and fail past `cut` (a file
/// cut short after its header was read).
struct Watched {
    bytes: Vec<u8>,
    cut: u64,
    own: std::cell::RefCell<Vec<Range<u64>>>,
    into: std::cell::RefCell<Vec<Range<u64>>>,
}

impl Watched {
    fn new(bytes: &[u8], cut: u64) -> Watched {
        Watched { bytes: bytes.to_vec(), cut, own: Vec::new().into(), into: Vec::new().into() }
    }

    /// The longest range read, either way.
    fn longest(&self) -> u64 {
        let (own, into) = (self.own.borrow(), self.into.borrow());
        own.iter().chain(into.iter()).map(|r| r.end - r.start).max().unwrap_or(0)
    }
}

impl FileBytes for Watched {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> decode_lab_engine::Result<()> {
        self.into.borrow_mut().push(range.clone());
        if range.end > self.cut {
            let message = "failed to fill whole buffer".to_string();
            return Err(EngineError::Io { path: "watched".into(), message });
        }
        out.copy_from_slice(&self.bytes[range.start as usize..range.end as usize]);
        Ok(())
    }

    fn read(&self, range: Range<u64>) -> decode_lab_engine::Result<Cow<'_, [u8]>> {
        let mut out = vec![0; (range.end - range.start) as usize];
        self.read_into(range.clone(), &mut out)?;
        self.into.borrow_mut().pop();
        self.own.borrow_mut().push(range);
        Ok(Cow::Owned(out))
    }
}

/// Where each matrix's (2-D tensor's) bytes are in safetensors file `bytes`.
fn matrix_ranges(bytes: &[u8]) -> Vec<(String, Range<u64>)> {
    let (header, metadata) = SafeTensors::read_metadata(bytes).unwrap();
    let start = 8 + header as u64;
    let tensors = metadata.tensors();
    let matrices = tensors.into_iter().filter(|(_, info)| info.shape.len() == 2);
    let range = |(from, to): (usize, usize)| start + from as u64..start + to as u64;
    matrices.map(|(name, info)| (name, range(info.data_offsets))).collect()
}

#[test]
fn a_file_is_read_a_tensor_at_a_time_as_its_bytes_would_load() {
    for fixture in ["tiny_odd", "untied_f16", "mistral_f16"] {
        let dir = common::fixtures().join("golden").join(fixture);
        let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let tensors = SafeTensors::deserialize(&bytes).unwrap().tensors();
        let largest = tensors.iter().map(|(_, t)| t.data().len() as u64).max().unwrap();
        let matrices = tensors.iter().filter(|(_, t)| t.shape().len() == 2);
        let f16 = matrices.clone().all(|(_, t)| t.dtype() == Dtype::F16);
        for choice in ["f32", "auto", "f16", "int8", "int4", "bf16"] {
            let choice = WeightsChoice::from_name(choice).unwrap();
            let file = Watched::new(&bytes, bytes.len() as u64);
            let read = Model::from_file_as(&config, &file, choice).unwrap();
            let whole = Model::from_bytes_as(&config, &bytes, choice).unwrap();
            let (a, b) = (format!("{:?}", read.weights), format!("{:?}", whole.weights));
            assert_eq!(a, b, "{fixture} {choice:?}");
            // No read longer than the largest tensor (the header is shorter).
            assert_eq!(file.longest(), largest, "{fixture} {choice:?}");
            // An f16 file held as f16: GPT-2's matrices and a Llama's
            // embedding and head (its blocks are gathered from their stored
            // values; the positions are read as f32) are read straight into
            // their words, with no buffer of their own.
            let straight = |name: &str| !name.contains("layers.") && !name.contains("wpe");
            for (name, range) in matrix_ranges(&bytes) {
                let own = file.own.borrow().contains(&range);
                let into = file.into.borrow().contains(&range);
                let kept = f16 && choice.keeps_f16() && straight(&name);
                assert_eq!((own, into), (!kept, kept), "{fixture} {choice:?} {name}");
            }
        }
    }
    // Cut short after its header: an error naming the file, not a panic,
    // whichever way the tensor is read.
    for fixture in ["tiny_odd", "untied_f16"] {
        let dir = common::fixtures().join("golden").join(fixture);
        let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        for cut in [bytes.len() as u64 - 1, bytes.len() as u64 / 2] {
            let file = Watched::new(&bytes, cut);
            let e = Model::from_file_as(&config, &file, WeightsChoice::Auto).unwrap_err();
            let e = e.to_string();
            assert!(e.contains("watched") && e.contains("failed to fill whole buffer"), "{e}");
        }
    }
}

/// The CLI's folder: the file opened, then cut short before its tensors are
/// read (another program writing it): an I/O error naming it, where a
/// memory-mapped file would have crashed the process.
#[test]
fn a_model_file_cut_short_while_it_loads_is_an_error() {
    let from = common::fixtures().join("golden").join("tiny_odd");
    let dir = std::env::temp_dir().join(format!("decode-lab-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("model.safetensors");
    std::fs::copy(from.join("model.safetensors"), &file).unwrap();
    let config = std::fs::read_to_string(from.join("config.json")).unwrap();
    let on_disk = OnDisk::open(&file, 1 << 30).unwrap();
    let whole = Model::from_file_as(&config, &on_disk, WeightsChoice::Auto).unwrap();
    assert_eq!(whole.config, Model::from_dir(&from).unwrap().config);
    let checkpoint = Checkpoint::open(&on_disk).unwrap();
    std::fs::File::options().write(true).open(&file).unwrap().set_len(100).unwrap();
    let info = checkpoint.info("wte.weight").or(checkpoint.info("transformer.wte.weight"));
    let e = checkpoint.data(info.unwrap()).unwrap_err().to_string();
    assert!(e.contains("model.safetensors"), "{e}");
    let e = Model::from_file_as(&config, &on_disk, WeightsChoice::Auto).unwrap_err().to_string();
    assert!(e.contains("model.safetensors"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

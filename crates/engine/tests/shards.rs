//! A checkpoint split over several safetensors files (what `save_pretrained`
//! writes above its shard size) loads as the same model from the CLI's
//! folder; an index naming a file that is not there, or a path, is refused.
#![cfg(not(target_arch = "wasm32"))] // native: a model directory

mod common;

use std::collections::HashMap;
use std::path::Path;

use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::model::Model;
use decode_lab_engine::{Session, Wanted};
use safetensors::SafeTensors;

/// `from` (a folder of one model.safetensors) written to `to` as two shards
/// and an index, the tensors dealt alternately.
fn split(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("config.json"), to.join("config.json")).unwrap();
    let bytes = std::fs::read(from.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
    let mut map = serde_json::Map::new();
    let mut parts: [Vec<_>; 2] = [Vec::new(), Vec::new()];
    for (i, (name, view)) in st.tensors().into_iter().enumerate() {
        map.insert(name.clone(), files[i % 2].into());
        parts[i % 2].push((name, view));
    }
    for (file, part) in files.iter().zip(parts) {
        let part: HashMap<_, _> = part.into_iter().collect();
        std::fs::write(to.join(file), safetensors::serialize(part, None).unwrap()).unwrap();
    }
    let index = serde_json::json!({"metadata": {"total_size": bytes.len()}, "weight_map": map});
    std::fs::write(to.join("model.safetensors.index.json"), index.to_string()).unwrap();
}

fn logits(model: Model) -> Vec<f32> {
    let mut s = Session::Cpu(CpuSession::new(std::sync::Arc::new(model)));
    pollster::block_on(s.prefill(&[1, 5, 9, 2], Wanted::All)).unwrap()
}

#[test]
fn a_sharded_checkpoint_loads_as_the_single_file() {
    for name in ["llama_gqa", "tiny_odd"] {
        let one = common::fixtures().join("golden").join(name);
        let dir =
            std::env::temp_dir().join(format!("decode-lab-shards-{name}-{}", std::process::id()));
        split(&one, &dir);
        let sharded = Model::from_dir(&dir).unwrap();
        assert_eq!(logits(sharded), logits(Model::from_dir(&one).unwrap()), "{name}");
        // A shard gone: named, with the folder.
        std::fs::remove_file(dir.join("model-00002-of-00002.safetensors")).unwrap();
        let e = Model::from_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("it names model-00002-of-00002.safetensors, which"), "{e}");
        // A path in the index: refused before anything is read.
        let index = r#"{"weight_map": {"a": "../model.safetensors"}}"#;
        std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
        let e = Model::from_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("not a .safetensors file in the folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

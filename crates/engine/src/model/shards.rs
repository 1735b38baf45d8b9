//! A checkpoint split over several safetensors files, as `save_pretrained`
//! writes one above its shard size: `model.safetensors.index.json` maps each
//! tensor to its file (`model-00001-of-00002.safetensors` …). Read from a
//! model directory (the CLI); the page refuses a split checkpoint.

use serde_json::Value;

use super::{read, OnDisk, MAX_CONFIG_BYTES, MAX_FILE_BYTES, SHARD_INDEX};
use crate::error::{EngineError, Result};

/// Every file the index names, opened (each read a tensor at a time), in
/// the order first named.
pub fn open_shards(dir: &std::path::Path) -> Result<Vec<OnDisk>> {
    let bad = |m: String| EngineError::Safetensors(format!("{SHARD_INDEX}: {m}"));
    let index: Value =
        serde_json::from_slice(&read(&dir.join(SHARD_INDEX), MAX_CONFIG_BYTES * 16)?)
            .map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let map = index.get("weight_map").and_then(Value::as_object);
    let map = map.ok_or_else(|| bad("no `weight_map` object".into()))?;
    let mut names: Vec<&str> = Vec::new();
    for (tensor, file) in map {
        let file =
            file.as_str().ok_or_else(|| bad(format!("the file of `{tensor}` is not text")))?;
        // A file name, not a path: the index cannot reach outside the folder.
        let plain = !file.is_empty() && !file.contains(['/', '\\']) && file != "..";
        if !plain || !file.ends_with(".safetensors") {
            return Err(bad(format!(
                "`{tensor}` is in {file:?}, not a .safetensors file in the folder"
            )));
        }
        if !names.contains(&file) {
            names.push(file);
        }
    }
    if names.is_empty() {
        return Err(bad("its `weight_map` names no file".into()));
    }
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            match path.exists() {
                true => OnDisk::open(&path, MAX_FILE_BYTES),
                false => {
                    Err(bad(format!("it names {name}, which {} does not have", dir.display())))
                }
            }
        })
        .collect()
}

//! `model.safetensors` bytes (header, tensor table, data) against the tiny
//! fixture's config: any input is a model or an error, never a panic, and
//! nothing is allocated from a size the file claims but does not hold.
#![no_main]

use engine::model::{Config, Weights, WeightsChoice};
use engine::storage::format::Format;
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = include_str!("../../tests/fixtures/golden/tiny_odd/config.json");

fuzz_target!(|data: &[u8]| {
    let config = Config::from_json(CONFIG).expect("the fixture's config is valid");
    // Widened to f32, f16 matrices kept as stored (the page's f16 path), and
    // each matrix packed as it is read (int4).
    let _ = Weights::from_safetensors(data, &config, WeightsChoice::Exactly(Format::F32));
    let _ = Weights::from_safetensors(data, &config, WeightsChoice::Auto);
    let _ = Weights::from_safetensors(data, &config, WeightsChoice::Exactly(Format::Int4));
});

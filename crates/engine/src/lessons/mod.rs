//! What the lessons measure, beside the engine they measure: the cost
//! models of a step (`cost`: bytes, FLOPs, the read-rate share), how far a
//! variant's next-token distributions move from a reference (`quality`,
//! and `kv_quality` for a cache under a budget or grouped K/V heads), the
//! spread of a weight matrix (`spread`), the logit lens (`lens`) and the
//! attention heads' readouts (`heads`). The engine itself never calls them.

pub mod cost;
pub mod heads;
pub mod kv_quality;
pub mod lens;
pub mod quality;
pub mod spread;

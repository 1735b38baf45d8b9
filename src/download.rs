//! Before a big download: its size (from a HEAD request, nothing fetched)
//! and the memory the model will need, shown for a yes above 100 MB, and a
//! refusal — which limit, by how much — when it cannot fit the page.

use engine::model::Config;

/// Downloads above this many bytes wait for the user's yes.
pub const CONFIRM_BYTES: u64 = 100_000_000;

/// The most a page's WebAssembly memory can grow to (wasm32: 4 GiB).
pub const PAGE_MEMORY_LIMIT: u64 = 4 << 30;

/// A model file big enough to ask about first.
#[derive(Clone, Debug, PartialEq)]
pub struct BigDownload {
    /// `model.safetensors`' size.
    pub file_bytes: u64,
    /// The page's memory while loading: the file, plus its weights as f32.
    pub page_bytes: u64,
    /// The weights on the GPU in f32 (half that when kept as f16).
    pub gpu_bytes: u64,
}

impl BigDownload {
    /// The estimate for a file of `file_bytes` holding `config`'s weights.
    pub fn estimate(file_bytes: u64, config: &Config) -> BigDownload {
        let f32_bytes = 4 * config.n_params() as u64;
        BigDownload { file_bytes, page_bytes: file_bytes + f32_bytes, gpu_bytes: f32_bytes }
    }

    /// Why the model cannot be loaded in a page at all, if it cannot.
    pub fn refusal(&self) -> Option<String> {
        (self.page_bytes > PAGE_MEMORY_LIMIT).then(|| {
            format!(
                "this model needs about {} of the page's memory (the {} file and its weights as f32); a WebAssembly page can hold at most {}, so it is over by {}",
                size(self.page_bytes),
                size(self.file_bytes),
                size(PAGE_MEMORY_LIMIT),
                size(self.page_bytes - PAGE_MEMORY_LIMIT)
            )
        })
    }

    /// The question, in words.
    pub fn question(&self) -> String {
        format!(
            "model.safetensors is {}. Loading it takes about {} of this page's memory and up to {} on the GPU (half that when the weights are kept as f16; if the GPU cannot hold them, the CPU engine takes over in a worker that holds its own copy).",
            size(self.file_bytes),
            size(self.page_bytes),
            size(self.gpu_bytes)
        )
    }
}

/// Bytes in MB or GB (powers of ten, as download sizes are quoted).
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.2} GB", b as f64 / 1e9),
        b => format!("{:.0} MB", b as f64 / 1e6),
    }
}

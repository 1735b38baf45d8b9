//! Before a big download: its size (from a HEAD request, nothing fetched)
//! and the memory the model will need, shown for a yes above 100 MB, and a
//! refusal — which limit, by how much — when it cannot fit the page.

use engine::model::{Config, WeightsChoice};
use engine::storage::format::Format;

/// Downloads above this many bytes wait for the user's yes.
pub const CONFIRM_BYTES: u64 = 100_000_000;

/// The most a page's WebAssembly memory can grow to (wasm32: 4 GiB).
pub const PAGE_MEMORY_LIMIT: u64 = 4 << 30;

/// The longest file a page keeps (a JavaScript array's length is a u32 here).
pub const FILE_LIMIT: u64 = u32::MAX as u64;

/// A model file big enough to ask about first.
#[derive(Clone, Debug, PartialEq)]
pub struct BigDownload {
    /// `model.safetensors`' size.
    pub file_bytes: u64,
    /// The page's memory while loading: the file (in a JavaScript array)
    /// and [`wasm_bytes`](Self::wasm_bytes).
    pub page_bytes: u64,
    /// The page's WebAssembly memory while loading: the weights as the page
    /// reads them (an f16 file held as f16: as stored; int8, int4 and bf16:
    /// packed as they are read, a piece at a time; else widened to f32, plus
    /// their packed copy when f16 is held) and the largest matrix's bytes as
    /// read into a buffer of their own (none for GPT-2 held as stored: each
    /// matrix is read straight into its words; a Llama block is gathered
    /// from its stored values).
    pub wasm_bytes: u64,
    /// How the weights are read (for the refusal's words).
    pub read: Read,
    /// The weights as held, on the GPU (or in the CPU engine).
    pub gpu_bytes: u64,
    /// The CPU worker's memory, when it runs the model: its copy of the file,
    /// the page's load over again, the largest block matrix laid out anew
    /// for the CPU (a WebAssembly memory keeps its peak) and, with a coworker
    /// and int8 or int4 blocks (row-major in a page), a copy of its half of
    /// each.
    pub worker_bytes: u64,
    /// The CPU worker's coworker's memory, when there is one: its load is the
    /// worker's (both keep the model and read their halves of each product
    /// from it, or from copies of them: see `worker_bytes`).
    pub coworker_bytes: u64,
    /// Whether the page found WebGPU (else the worker runs the model).
    pub on_gpu: bool,
}

/// How a load reads the checkpoint's weights, as far as memory goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Read {
    /// An f16 file held as f16: the words as stored.
    AsStored,
    /// Each matrix packed as it is read (`WeightsChoice::packed_on_read`).
    Packed,
    /// Every weight widened to f32 first.
    Widened,
}

impl BigDownload {
    /// The estimate for a file of `file_bytes` holding `config`'s weights,
    /// held as `weights` asks, run on the GPU (`on_gpu`) or in the CPU worker
    /// (with a coworker where the page can give one and the model is big
    /// enough for it: `coworker`).
    pub fn estimate(
        file_bytes: u64,
        config: &Config,
        weights: WeightsChoice,
        on_gpu: bool,
        coworker: bool,
    ) -> BigDownload {
        let params = config.n_params();
        // Under 3 bytes a parameter: a 2-byte (f16) checkpoint.
        let two_byte = file_bytes < 3 * params as u64;
        let held = match weights {
            WeightsChoice::Auto if two_byte => Format::F16,
            WeightsChoice::Auto => Format::F32,
            WeightsChoice::Exactly(format) => format,
        };
        let held_bytes = config.weight_bytes(held);
        // An f16 file held as f16 is read as stored; int8, int4 and bf16 are
        // packed matrix by matrix; anything else is widened to f32, then
        // packed into a copy unless held as f32.
        let read = if two_byte && weights.keeps_f16() {
            Read::AsStored
        } else if weights.packed_on_read().is_some() {
            Read::Packed
        } else {
            Read::Widened
        };
        // The page and the CPU worker both keep the file in a JavaScript
        // array and read it a tensor at a time: their WebAssembly memory holds
        // the weights as read and the largest matrix's bytes read into a
        // buffer of their own.
        let weights_bytes = match (read, held) {
            // (each matrix packed from its stored values a piece at a time,
            // a Llama block's gathered so: no matrix is ever f32 whole)
            (Read::AsStored | Read::Packed, _) => held_bytes,
            (Read::Widened, Format::F32) => 4 * params as u64,
            (Read::Widened, _) => 4 * params as u64 + held_bytes,
        };
        let stored_width = if two_byte { 2 } else { 4 };
        let largest_block = config.block_matrices().into_iter().map(|(r, c)| r * c).max();
        let largest_block = largest_block.unwrap_or(0) as u64;
        let read_bytes = match read {
            // GPT-2's f16 words are read straight into the matrices that keep them.
            Read::AsStored if config.llama().is_none() => 0,
            // A Llama block's matrices are gathered from their stored values.
            Read::AsStored => stored_width * largest_block,
            Read::Packed | Read::Widened => stored_width * config.largest_matrix_weights() as u64,
        };
        let wasm_bytes = weights_bytes + read_bytes;
        let page_bytes = file_bytes + wasm_bytes;
        // The worker's load is the page's, from its own copy of the file; then
        // its CPU layout copies each block matrix anew (in place of the
        // last; the embedding keeps its words). With a coworker, each reads
        // its half of a product from its weights where that half is one run
        // of words (column panels, head rows), and copies half of each row
        // of a row-major block matrix (int8 and int4 in a page).
        let shares = coworker && !on_gpu;
        let row_major = matches!(held, Format::Int8 | Format::Int8PerTensor | Format::Int4);
        let halves = match shares && row_major {
            true => held.bytes(config.n_layer * config.block_matrix_weights()) / 2,
            false => 0,
        };
        let worker_bytes = page_bytes + held.bytes(largest_block as usize) + halves;
        BigDownload {
            file_bytes,
            page_bytes,
            wasm_bytes,
            read,
            gpu_bytes: held_bytes,
            worker_bytes,
            coworker_bytes: if shares { worker_bytes } else { 0 },
            on_gpu,
        }
    }

    /// Why the model cannot be loaded in a page at all, if it cannot: a
    /// file longer than a page's array, or weights over its WebAssembly memory.
    pub fn refusal(&self) -> Option<String> {
        if self.file_bytes > FILE_LIMIT {
            return Some(format!(
                "model.safetensors is {}; a page can hold a file of at most {}, so it is over by {}",
                size(self.file_bytes),
                size(FILE_LIMIT),
                size(self.file_bytes - FILE_LIMIT)
            ));
        }
        (self.wasm_bytes > PAGE_MEMORY_LIMIT).then(|| {
            format!(
                "this model needs about {} of the page's WebAssembly memory ({}); a WebAssembly page can hold at most {}, so it is over by {}",
                size(self.wasm_bytes),
                match self.read {
                    Read::AsStored => "its weights as stored",
                    Read::Packed => "its weights packed as they are read and its largest matrix as read",
                    Read::Widened => "its weights widened to f32 and its largest matrix as read",
                },
                size(PAGE_MEMORY_LIMIT),
                size(self.wasm_bytes - PAGE_MEMORY_LIMIT)
            )
        })
    }

    /// The question, in words: the memory on the backend the page found.
    pub fn question(&self) -> String {
        let (file, page, worker) =
            (size(self.file_bytes), size(self.page_bytes), size(self.worker_bytes));
        match self.on_gpu {
            true => format!(
                "model.safetensors is {file}. Loading it takes about {page} of this page's memory and about {} on the GPU (if the GPU cannot hold them, the CPU engine takes over in a worker that needs about {worker} more).",
                size(self.gpu_bytes)
            ),
            false if self.coworker_bytes > 0 => format!(
                "model.safetensors is {file}. Loading it takes about {page} of this page's memory, about {worker} more in the CPU worker that runs it (it loads its own copy) and about {} in a second worker that computes half of each step: about {} in all.",
                size(self.coworker_bytes),
                size(self.page_bytes + self.worker_bytes + self.coworker_bytes)
            ),
            false => format!(
                "model.safetensors is {file}. Loading it takes about {page} of this page's memory, and about {worker} more in the CPU worker that runs it (it loads its own copy): about {} in all.",
                size(self.page_bytes + self.worker_bytes)
            ),
        }
    }
}

/// Bytes in MB or GB (powers of ten, as download sizes are quoted).
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.2} GB", b as f64 / 1e9),
        b => format!("{:.0} MB", b as f64 / 1e6),
    }
}

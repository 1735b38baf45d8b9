//! A kernel's cost record: what one dispatch costs in structure, checkable
//! without a GPU. It is a model: it ranks designs, it does not predict
//! microseconds. A decode step on a real GPU waits on two things — DRAM
//! latency (about half a microsecond a load) for every round of loads an
//! invocation issues one after another, and DRAM bandwidth for the bytes —
//! so the record counts those rounds (`chain`), the bytes, and whether the
//! loads of neighbouring invocations fall on neighbouring words (what
//! makes a GPU's memory transactions whole). Refit how it is read whenever a
//! real GPU is measured (`./tools/dev gpu-bench`).

use crate::storage::format::{Channels, Format};

/// What one dispatch costs, in structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// Invocations launched (workgroups × workgroup size).
    pub invocations: u64,
    /// The longest chain of dependent global loads in one invocation: rounds
    /// of loads where each round is issued only after the values of the one
    /// before are used (an iteration of a loop that loads, unless it loads
    /// several independent values before using any; a load whose address
    /// comes from another load). Each round waits about one DRAM latency.
    pub chain: u64,
    /// Bytes read from global memory, each distinct byte once per dispatch
    /// (what DRAM must serve when caches catch re-reads).
    pub bytes: u64,
    /// Of `bytes`: weight matrices and their scales.
    pub weights: u64,
    /// Of `bytes`: rows of the KV cache.
    pub kv: u64,
    /// Whether in every load of weights or cached keys and values,
    /// neighbouring invocations read neighbouring words (or the same one).
    pub coalesced: bool,
}

impl Cost {
    /// An element-wise pass: one round per invocation of `workgroups` (of
    /// [`WG`](super::WG) each), neighbours reading neighbours, `bytes` read
    /// and written, no weights and no cache.
    pub fn one_round(workgroups: [u32; 3], bytes: u64) -> Cost {
        Cost::plain(invocations(workgroups, super::WG), 1, bytes)
    }

    /// `invocations` launched, each `chain` rounds long, reading `bytes`
    /// (no weights, no cache), neighbours reading neighbours.
    pub fn plain(invocations: u64, chain: u64, bytes: u64) -> Cost {
        Cost { invocations, chain, bytes, weights: 0, kv: 0, coalesced: true }
    }

    /// And `weights` bytes of weight matrices besides, `coalesced` or not.
    pub fn with_weights(self, weights: u64, coalesced: bool) -> Cost {
        Cost { bytes: self.bytes + weights, weights: self.weights + weights, coalesced, ..self }
    }

    /// And `kv` bytes of cached keys and values besides, `coalesced` or not.
    pub fn with_kv(self, kv: u64, coalesced: bool) -> Cost {
        Cost { bytes: self.bytes + kv, kv: self.kv + kv, coalesced, ..self }
    }

    /// Several dispatches together: their sums, and coalesced if all are.
    pub fn total<'a>(costs: impl IntoIterator<Item = &'a Cost>) -> Cost {
        costs.into_iter().fold(Cost { coalesced: true, ..Cost::default() }, |t, c| Cost {
            invocations: t.invocations + c.invocations,
            chain: t.chain + c.chain,
            bytes: t.bytes + c.bytes,
            weights: t.weights + c.weights,
            kv: t.kv + c.kv,
            coalesced: t.coalesced && c.coalesced,
        })
    }
}

/// Bytes of a `(rows, cols)` matrix in `format`: its words and its scales.
pub fn matrix_bytes(format: Format, rows: u64, cols: u64, channels: Channels) -> u64 {
    let scales = format.scale_count(rows as usize, cols as usize, channels) as u64;
    format.bytes((rows * cols) as usize) + 4 * scales
}

/// Bytes of `n` f32 values.
pub fn floats(n: u64) -> u64 {
    4 * n
}

/// Rows (words, keys) whose weights (and inputs) an invocation of matmul_split,
/// attention_split, attention_combine and block_sum loads before using any:
/// `UNROLL` in their WGSL.
pub const UNROLL: u64 = 4;

/// Rows a single-row split kernel's invocation loads before using any:
/// `DOT_ROWS` in shaders/split_dot.wgsl (eight measured no faster on an H200).
pub const DOT_ROWS: u64 = 4;

/// Rounds of a loop of `trips` iterations that loads `unroll` iterations'
/// values before using any.
pub fn rounds(trips: u64, unroll: u64) -> u64 {
    trips.div_ceil(unroll.max(1))
}

/// Whether a load whose consecutive invocations are `stride` elements apart
/// reads neighbouring words (or the same one) in `format`: a stride of at
/// most one word.
pub fn neighbouring(stride: u64, format: Format) -> bool {
    stride <= format.per_word() as u64
}

/// Invocations of a dispatch of `groups` workgroups of `size`.
pub fn invocations(groups: [u32; 3], size: u32) -> u64 {
    groups.iter().map(|&g| u64::from(g)).product::<u64>() * u64::from(size)
}

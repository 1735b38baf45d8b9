//! How weight matrices are stored for the kernels that read them (matmul,
//! matvec, lm_head, embedding): each format is a WGSL snippet
//! (`shaders/format_*.wgsl`, prepended to those kernels) defining the word type
//! of the `w` binding and `w_load(i)`, and here its CPU twin [`Format::load`]
//! and the packing that writes the words. Layer norms, biases, the position
//! embedding and the KV cache stay f32 in every format.

use half::f16;

/// A weight storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One f32 per weight (4 bytes).
    F32,
    /// Two f16 per u32 word (2 bytes per weight); widened to f32 in the kernel.
    F16,
}

impl Format {
    pub const ALL: [Format; 2] = [Format::F32, Format::F16];

    /// The name on the command line (`--weights`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::F32 => "f32",
            Format::F16 => "f16",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The WGSL snippet defining `Word` and `w_load`.
    pub fn snippet(self) -> &'static str {
        match self {
            Format::F32 => include_str!("../../../../shaders/format_f32.wgsl"),
            Format::F16 => include_str!("../../../../shaders/format_f16.wgsl"),
        }
    }

    /// Bytes that `n` weights take in this format (whole 4-byte words).
    pub fn bytes(self, n: usize) -> u64 {
        match self {
            Format::F32 => 4 * n as u64,
            Format::F16 => 4 * n.div_ceil(2) as u64,
        }
    }

    /// The words uploaded for `w`, as bytes (an odd f16 count ends with a zero half).
    pub fn pack(self, w: &[f32]) -> Vec<u8> {
        match self {
            Format::F32 => bytemuck::cast_slice(w).to_vec(),
            Format::F16 => {
                let words: Vec<u32> = w
                    .chunks(2)
                    .map(|pair| {
                        let lo = f16::from_f32(pair[0]).to_bits() as u32;
                        let hi = pair.get(1).map_or(0, |&v| f16::from_f32(v).to_bits() as u32);
                        lo | (hi << 16)
                    })
                    .collect();
                bytemuck::cast_slice(&words).to_vec()
            }
        }
    }

    /// CPU twin of the snippet's `w_load(i)` on packed `words`.
    pub fn load(self, words: &[u32], i: usize) -> f32 {
        match self {
            Format::F32 => f32::from_bits(words[i]),
            Format::F16 => f16::from_bits((words[i / 2] >> (16 * (i % 2))) as u16).to_f32(),
        }
    }

    /// Whether this format holds `v` exactly (checked per value, without packing).
    pub fn holds(self, v: f32) -> bool {
        match self {
            Format::F32 => true,
            Format::F16 => f16::from_f32(v).to_f32() == v,
        }
    }

    /// What the kernels compute with: `w` through this format and back
    /// (f16: rounded to nearest, ties to even; values already f16 are unchanged).
    pub fn round(self, w: &[f32]) -> Vec<f32> {
        let packed = self.pack(w);
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&packed);
        (0..w.len()).map(|i| self.load(&words, i)).collect()
    }
}

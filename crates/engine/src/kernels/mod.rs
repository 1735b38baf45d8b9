//! One module per WGSL kernel in `shaders/`, named the same. Each holds the
//! kernel's `Params` (mirror of the WGSL uniform at binding 0), its CPU twin
//! `run_cpu` (the reference the GPU result is tested against, and the code the
//! CPU engine runs), and the dispatch size.

pub mod attention;
pub mod attention_probs;
pub mod embedding;
pub mod gelu;
pub mod kv_write;
pub mod layernorm;
pub mod lm_head;
pub mod ln_fc_gelu;
pub mod ln_qkv;
pub mod matmul;
pub mod matvec_residual;
pub mod residual_add;

/// Threads per workgroup of the 1-D kernels (`override WG` in WGSL). 64 is
/// within every adapter's limits, including WebGPU compatibility mode (128).
pub const WG: u32 = 64;

/// The most workgroups a dispatch may have along one dimension (WebGPU's default).
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;

/// The LayerNorm statistics the kernels that start with one share.
const LN_STATS: &str = include_str!("../../../../shaders/ln_stats.wgsl");

/// Every kernel, mapping a name to its WGSL source. Prefill runs embedding,
/// then per block layernorm, matmul, kv_write, attention, matmul,
/// residual_add, layernorm, matmul, gelu, matmul, residual_add, then
/// layernorm and lm_head; decode fuses each block into five: ln_qkv,
/// attention, matvec_residual, ln_fc_gelu, matvec_residual. attention_probs
/// runs only when a view asks for the attention weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    Embedding,
    Layernorm,
    Matmul,
    LnQkv,
    KvWrite,
    Attention,
    AttentionProbs,
    MatvecResidual,
    ResidualAdd,
    LnFcGelu,
    Gelu,
    LmHead,
}

impl Kernel {
    /// All kernels, in data-flow order.
    pub const ALL: [Kernel; 12] = [
        Kernel::Embedding,
        Kernel::Layernorm,
        Kernel::Matmul,
        Kernel::LnQkv,
        Kernel::KvWrite,
        Kernel::Attention,
        Kernel::AttentionProbs,
        Kernel::MatvecResidual,
        Kernel::ResidualAdd,
        Kernel::LnFcGelu,
        Kernel::Gelu,
        Kernel::LmHead,
    ];

    /// The file name in `shaders/` (without `.wgsl`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embedding => "embedding",
            Kernel::Layernorm => "layernorm",
            Kernel::Matmul => "matmul",
            Kernel::LnQkv => "ln_qkv",
            Kernel::KvWrite => "kv_write",
            Kernel::Attention => "attention",
            Kernel::AttentionProbs => "attention_probs",
            Kernel::MatvecResidual => "matvec_residual",
            Kernel::ResidualAdd => "residual_add",
            Kernel::LnFcGelu => "ln_fc_gelu",
            Kernel::Gelu => "gelu",
            Kernel::LmHead => "lm_head",
        }
    }

    /// The kernel whose `name()` is `name`.
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The WGSL source, compiled into the binary.
    pub fn source(self) -> &'static str {
        match self {
            Kernel::Embedding => include_str!("../../../../shaders/embedding.wgsl"),
            Kernel::Layernorm => include_str!("../../../../shaders/layernorm.wgsl"),
            Kernel::Matmul => include_str!("../../../../shaders/matmul.wgsl"),
            Kernel::LnQkv => include_str!("../../../../shaders/ln_qkv.wgsl"),
            Kernel::KvWrite => include_str!("../../../../shaders/kv_write.wgsl"),
            Kernel::Attention => include_str!("../../../../shaders/attention.wgsl"),
            Kernel::AttentionProbs => include_str!("../../../../shaders/attention_probs.wgsl"),
            Kernel::MatvecResidual => include_str!("../../../../shaders/matvec_residual.wgsl"),
            Kernel::ResidualAdd => include_str!("../../../../shaders/residual_add.wgsl"),
            Kernel::LnFcGelu => include_str!("../../../../shaders/ln_fc_gelu.wgsl"),
            Kernel::Gelu => include_str!("../../../../shaders/gelu.wgsl"),
            Kernel::LmHead => include_str!("../../../../shaders/lm_head.wgsl"),
        }
    }

    /// Whether the kernel reads a weight matrix through the format snippet.
    pub fn reads_weights(self) -> bool {
        use Kernel::*;
        matches!(self, Embedding | Matmul | LnQkv | MatvecResidual | LnFcGelu | LmHead)
    }

    /// Whether the kernel starts with a LayerNorm (`ln_stats` in shaders/ln_stats.wgsl).
    pub fn starts_with_layernorm(self) -> bool {
        matches!(self, Kernel::Layernorm | Kernel::LnQkv | Kernel::LnFcGelu)
    }

    /// The WGSL to compile for weights stored in `format`: the snippets the
    /// kernel calls (the format's `w_load`, `ln_stats`), then the kernel.
    pub fn source_for(self, format: crate::storage::format::Format) -> String {
        let weights = self.reads_weights().then(|| format.snippet());
        let ln = self.starts_with_layernorm().then_some(LN_STATS);
        let snippets = weights.into_iter().chain(ln);
        snippets.chain([self.source()]).collect::<Vec<_>>().join("\n")
    }

    /// Whether the shader declares `override WG` (the matmul's tile is fixed).
    pub fn has_wg_override(self) -> bool {
        self != Kernel::Matmul
    }
}

/// Workgroups for `n` elements at `WG` threads each, folded into a 2-D grid when
/// one dimension would exceed the limit (the shaders rebuild the flat index).
pub fn grid_1d(n: usize) -> [u32; 3] {
    let groups = n.div_ceil(WG as usize).max(1) as u32;
    if groups <= MAX_GROUPS_PER_DIM {
        [groups, 1, 1]
    } else {
        let y = groups.div_ceil(MAX_GROUPS_PER_DIM);
        [groups.div_ceil(y), y, 1]
    }
}

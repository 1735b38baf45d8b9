//! One module per WGSL kernel in `shaders/`, named the same. Each holds the
//! kernel's `Params` (mirror of the WGSL uniform at binding 0), its CPU twin
//! `run_cpu` (the reference the GPU result is tested against, and the code the
//! CPU engine runs), and the dispatch size.

pub mod attention;
pub mod embedding;
pub mod format;
pub mod gelu;
pub mod kv_write;
pub mod layernorm;
pub mod lm_head;
pub mod matmul;
pub mod matrix;
pub mod matvec;
pub mod residual_add;

/// Threads per workgroup of the 1-D kernels (`override WG` in WGSL). 64 is
/// within every adapter's limits, including WebGPU compatibility mode (128).
pub const WG: u32 = 64;

/// The most workgroups a dispatch may have along one dimension (WebGPU's default).
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;

/// Every kernel, mapping a name to its WGSL source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    Embedding,
    Layernorm,
    Matmul,
    Matvec,
    KvWrite,
    Attention,
    ResidualAdd,
    Gelu,
    LmHead,
}

impl Kernel {
    /// All kernels, in data-flow order.
    pub const ALL: [Kernel; 9] = [
        Kernel::Embedding,
        Kernel::Layernorm,
        Kernel::Matmul,
        Kernel::Matvec,
        Kernel::KvWrite,
        Kernel::Attention,
        Kernel::ResidualAdd,
        Kernel::Gelu,
        Kernel::LmHead,
    ];

    /// The file name in `shaders/` (without `.wgsl`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embedding => "embedding",
            Kernel::Layernorm => "layernorm",
            Kernel::Matmul => "matmul",
            Kernel::Matvec => "matvec",
            Kernel::KvWrite => "kv_write",
            Kernel::Attention => "attention",
            Kernel::ResidualAdd => "residual_add",
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
            Kernel::Matvec => include_str!("../../../../shaders/matvec.wgsl"),
            Kernel::KvWrite => include_str!("../../../../shaders/kv_write.wgsl"),
            Kernel::Attention => include_str!("../../../../shaders/attention.wgsl"),
            Kernel::ResidualAdd => include_str!("../../../../shaders/residual_add.wgsl"),
            Kernel::Gelu => include_str!("../../../../shaders/gelu.wgsl"),
            Kernel::LmHead => include_str!("../../../../shaders/lm_head.wgsl"),
        }
    }

    /// Whether the kernel reads a weight matrix through the format snippet.
    pub fn reads_weights(self) -> bool {
        matches!(self, Kernel::Embedding | Kernel::Matmul | Kernel::Matvec | Kernel::LmHead)
    }

    /// The WGSL to compile for weights stored in `format`: the format's
    /// snippet first for the kernels that read weights.
    pub fn source_for(self, format: format::Format) -> String {
        if self.reads_weights() {
            format!("{}\n{}", format.snippet(), self.source())
        } else {
            self.source().to_string()
        }
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

//! One module per WGSL kernel in `shaders/`, named the same. Each is the one
//! place that says everything about its kernel: the `Params` (mirror of the
//! WGSL uniform at binding 0), the CPU twin `run_cpu` (the reference the GPU
//! result is tested against, and the code the CPU engine runs), and a
//! `Shape` implementing [`Launch`]: its `Params` from the pass, its
//! workgroups and its [`Cost`]. The list below names each kernel once; its
//! source, the snippets it needs and its pipeline constants are derived
//! from the WGSL itself.

pub mod argmax;
pub mod attention;
pub mod attention_combine;
pub mod attention_probs;
pub mod attention_proj_split;
pub mod attention_split;
pub mod block_sum;
pub mod choose;
mod cost;
pub mod embedding;
pub mod gelu;
pub mod kv_mass;
pub mod kv_renumber;
pub mod kv_write;
pub mod layernorm;
pub mod lm_head;
pub mod lm_head_split;
pub mod ln_fc_gelu;
pub mod ln_fc_gelu_split;
pub mod ln_qkv;
pub mod ln_qkv_split;
pub mod matmul;
pub mod matmul_split;
pub mod matmul_tiled;
pub mod matvec_residual;
pub mod matvec_residual_split;
mod profile;
pub mod residual_add;
pub mod rms_norm;
pub mod rms_qkv;
pub mod rms_qkv_split;
pub mod rms_swiglu;
pub mod rms_swiglu_split;
pub mod rope;
mod snippets;
pub mod swiglu;
#[cfg(test)]
mod testing;

pub use cost::Cost;
pub use profile::{KernelsChoice, Profile, Split};

use crate::model::Config;
pub use crate::model::Heads;
use crate::storage::format::Format;

/// Threads per workgroup of the kernels shaped for CPU adapters (`override
/// WG` in WGSL). 64 is within every adapter's limits, including WebGPU
/// compatibility mode (128).
pub const WG: u32 = 64;

/// Threads per workgroup of the kernels shaped for real GPUs (the split
/// kernels): WebGPU's default `maxComputeInvocationsPerWorkgroup`.
pub const WG_SPLIT: u32 = 256;

/// The most workgroups a dispatch may have along one dimension (WebGPU's default).
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;

/// A profile's invocations per workgroup of a kernel in the table below:
/// `-` where the profile does not compile the kernel.
macro_rules! in_profile {
    (-) => {
        None
    };
    ($wg:ident) => {
        Some($wg)
    };
}

macro_rules! kernels {
    ($($kernel:ident => $module:ident, $cpu:tt, $gpu:tt,)*) => {
        /// Every kernel, named by type. Prefill runs embedding, then per
        /// block layernorm, matmul, kv_write, attention, matmul,
        /// residual_add, layernorm, matmul, gelu, matmul, residual_add, then
        /// layernorm and lm_head; decode fuses each block into ln_qkv,
        /// attention, matvec_residual, ln_fc_gelu, matvec_residual (the
        /// Llama family: rms_qkv and rms_swiglu for the first and fourth). The
        /// `_split` and `_tiled` kernels are the same steps shaped for real
        /// GPUs ([`Profile::Gpu`]); attention_probs runs only when a view asks
        /// for the attention weights (and, with kv_mass, for a heavy-hitter
        /// cache policy's running totals), block_sum only to measure the device.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kernel { $($kernel),* }

        impl Kernel {
            /// All kernels, in data-flow order.
            pub const ALL: &[Kernel] = &[$(Kernel::$kernel),*];

            /// The file name in `shaders/` (without `.wgsl`).
            pub fn name(self) -> &'static str {
                match self { $(Kernel::$kernel => stringify!($module)),* }
            }

            /// Invocations per workgroup of this kernel in `profile` (its
            /// `override WG`), or `None` where the profile does not compile it.
            pub fn wg_in(self, profile: Profile) -> Option<u32> {
                match (self, profile) {
                    $((Kernel::$kernel, Profile::Cpu) => in_profile!($cpu),)*
                    $((Kernel::$kernel, Profile::Gpu(_)) => in_profile!($gpu),)*
                }
            }

            /// The kernel's own WGSL, compiled into the binary.
            pub fn source(self) -> &'static str {
                match self {
                    $(Kernel::$kernel => include_str!(
                        concat!("../../../../shaders/", stringify!($module), ".wgsl")
                    )),*
                }
            }
        }

        $(impl Named for $module::Shape {
            const KERNEL: Kernel = Kernel::$kernel;
            type Params = $module::Params;
        })*
    };
}

/// What the kernel table says of a module's `Shape`, so that its [`Launch`]
/// states only what differs: the kernel it launches and that kernel's
/// `Params` (the uniform at binding 0).
pub trait Named {
    const KERNEL: Kernel;
    type Params: bytemuck::Pod;
}

// Every kernel, in data-flow order: its type, its file in `shaders/`, and
// its invocations per workgroup in the cpu and the gpu profile (`-`: that
// profile does not compile it). Real GPUs reduce ln_f's row (and
// prefill's) with a tree over 256.
kernels! {
    Embedding => embedding, WG, WG,
    Layernorm => layernorm, WG, WG_SPLIT,
    Matmul => matmul, WG, -,
    MatmulTiled => matmul_tiled, -, WG,
    MatmulSplit => matmul_split, -, WG_SPLIT,
    LnQkv => ln_qkv, WG, -,
    LnQkvSplit => ln_qkv_split, -, WG_SPLIT,
    RmsQkv => rms_qkv, WG, -,
    RmsQkvSplit => rms_qkv_split, -, WG_SPLIT,
    KvRenumber => kv_renumber, WG, WG,
    KvWrite => kv_write, WG, WG,
    Attention => attention, WG, WG,
    AttentionSplit => attention_split, -, WG_SPLIT,
    AttentionCombine => attention_combine, -, WG_SPLIT,
    AttentionProjSplit => attention_proj_split, -, WG_SPLIT,
    AttentionProbs => attention_probs, WG, WG,
    KvMass => kv_mass, WG, WG,
    MatvecResidual => matvec_residual, WG, -,
    MatvecResidualSplit => matvec_residual_split, -, WG_SPLIT,
    ResidualAdd => residual_add, WG, WG,
    LnFcGelu => ln_fc_gelu, WG, -,
    LnFcGeluSplit => ln_fc_gelu_split, -, WG_SPLIT,
    RmsSwiglu => rms_swiglu, WG, -,
    RmsSwigluSplit => rms_swiglu_split, -, WG_SPLIT,
    Gelu => gelu, WG, WG,
    RmsNorm => rms_norm, WG, WG_SPLIT,
    Rope => rope, WG, WG,
    Swiglu => swiglu, WG, WG,
    LmHead => lm_head, WG, -,
    LmHeadSplit => lm_head_split, -, WG_SPLIT,
    Argmax => argmax, WG_SPLIT, WG_SPLIT,
    BlockSum => block_sum, WG_SPLIT, WG_SPLIT,
}

impl Kernel {
    /// The kernel whose `name()` is `name`.
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Whether the kernel's workgroups follow a [`Split`] layout (its `Params` carry `wide`).
    pub fn takes_layout(self) -> bool {
        snippets::takes_layout(self.source())
    }

    /// Whether the kernel reads a weight matrix through the format snippet.
    pub fn reads_weights(self) -> bool {
        snippets::calls_format(self.source())
    }

    /// The WGSL to compile for weights stored in `format`: the shared
    /// snippets the kernel calls (the format's, `ln_stats`, `split_k`), then
    /// the kernel.
    pub fn source_for(self, format: Format) -> String {
        snippets::assemble(self.source(), format)
    }

    /// The pipeline-overridable constants the assembled source declares
    /// (`override WG`, …): what a pipeline may set, and nothing else.
    pub fn overrides(self, format: Format) -> Vec<String> {
        snippets::overrides(&self.source_for(format))
    }
}

/// Columns per invocation of the cpu profile's fused decode kernels that
/// start with a norm (`PAIR_COLS` in shaders/row_weights.wgsl: rms_qkv,
/// rms_swiglu, ln_qkv, ln_fc_gelu): whole weight words and whole pairs.
pub fn pair_cols(format: Format) -> u32 {
    let per_word = format.per_word() as u32;
    per_word + per_word % 2
}

/// Rows of x a decode step of the cpu profile uses: the residual stream,
/// then a normalised row for each workgroup of its widest fused kernel, of
/// `cols` columns (shaders/row_in_x.wgsl); an invocation takes at least one
/// column, whatever the format.
pub fn fused_x_rows(cols: usize) -> usize {
    1 + cols.div_ceil(WG as usize)
}

/// Columns of qkv for a uniform's `n_embd` and `group`: the queries, then
/// one K and one V head per group ([`Heads::qkv_width`]).
pub fn qkv_cols(n_embd: u32, group: u32) -> u32 {
    n_embd + 2 * (n_embd / group.max(1))
}

/// Where one dispatch runs: the rows and positions of its pass and the
/// model's shape. A batch's own-sequence op sees its one row (`n_rows` 1,
/// `row0` its row, `pos0` its position).
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    pub config: &'a Config,
    pub n_rows: u32,
    /// Position of the first row: what its position embedding reads.
    pub pos0: u32,
    /// Cache slot the first row's K/V go into, and the slots held before it
    /// (row r attends to slots `0 ..= keys0 + r`): both `pos0` unless a
    /// cache policy evicted tokens (`kv_policy`), when a newcomer takes an
    /// evicted token's slot below `keys0`.
    pub slot0: u32,
    pub keys0: u32,
    /// The rotary position of the first row: `pos0`, or its place in the
    /// cache (`keys0`) under a policy that renumbers (`kv_policy`).
    pub turn0: u32,
    /// Slots whose keys turn back one position before this pass (the first
    /// of the list `kv_renumber` reads; 0 unless a renumbering policy
    /// evicted a token for it).
    pub renumbered: u32,
    /// First row of the shared buffers the dispatch works on.
    pub row0: u32,
    /// First row and row count of the logits to compute.
    pub lm_row0: u32,
    pub lm_rows: u32,
}

impl<'a> At<'a> {
    /// `n_rows` rows of `config`'s model at the start of everything:
    /// position, cache slot, keys and buffer row 0, the logits of every row.
    pub fn rows(config: &'a Config, n_rows: u32) -> At<'a> {
        let (pos0, slot0, keys0, turn0, renumbered) = (0, 0, 0, 0, 0);
        At {
            config,
            n_rows,
            pos0,
            slot0,
            keys0,
            turn0,
            renumbered,
            row0: 0,
            lm_row0: 0,
            lm_rows: n_rows,
        }
    }

    // The model's shape as the uniforms hold it (u32; eps as f32).

    pub fn n_embd(&self) -> u32 {
        self.config.n_embd as u32
    }

    pub fn head_size(&self) -> u32 {
        self.config.head_size as u32
    }

    /// Query heads per cached K/V head.
    pub fn group(&self) -> u32 {
        self.config.heads().group as u32
    }

    pub fn eps(&self) -> f32 {
        self.config.layer_norm_epsilon
    }
}

/// What one kernel's dispatch needs beyond its buffers, stated in one place
/// per kernel (its module's `Shape`): the part fixed when the plan is built
/// is `self`, the rest comes from [`At`].
pub trait Launch: Named {
    /// The `Params` of this dispatch at `at`.
    fn params(&self, at: &At) -> Self::Params;
    /// Workgroups for `p` with weights in `format`.
    fn workgroups(&self, p: &Self::Params, format: Format) -> [u32; 3];
    /// Its structure for `p` (see [`Cost`]).
    fn cost(&self, p: &Self::Params, format: Format) -> Cost;
}

/// A [`Launch`] behind a pointer: what a plan's op holds.
pub trait Dispatch {
    /// The kernel it runs.
    fn kernel(&self) -> Kernel;
    /// Writes its `Params` at `at` into `slot` and returns its workgroups.
    fn encode(&self, at: &At, format: Format, slot: &mut [u8]) -> [u32; 3];
    /// Its structure at `at`.
    fn cost(&self, at: &At, format: Format) -> Cost;
}

impl<L: Launch> Dispatch for L {
    fn kernel(&self) -> Kernel {
        L::KERNEL
    }

    fn encode(&self, at: &At, format: Format, slot: &mut [u8]) -> [u32; 3] {
        let p = self.params(at);
        let bytes = bytemuck::bytes_of(&p);
        slot[..bytes.len()].copy_from_slice(bytes);
        self.workgroups(&p, format)
    }

    fn cost(&self, at: &At, format: Format) -> Cost {
        Launch::cost(self, &self.params(at), format)
    }
}

/// The uniform of the kernels that know only how many elements they touch
/// (gelu, residual_add): `Elements` in `shaders/grid_1d.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Elements {
    pub n: u32,
    pub _pad: [u32; 3],
}

impl Elements {
    /// `cols` columns of each of the pass's rows.
    pub fn of(at: &At, cols: u32) -> Elements {
        Elements { n: at.n_rows * cols, _pad: [0; 3] }
    }

    /// One invocation per element ([`grid_1d`]).
    pub fn workgroups(&self) -> [u32; 3] {
        grid_1d(self.n as usize)
    }
}

/// The `Shape` of an element-wise kernel (its module's `Params` is
/// [`Elements`]): one invocation per element of `cols` columns of each of the
/// pass's rows, one round, `$arrays` arrays of f32 read or written.
macro_rules! element_wise {
    ($(#[$doc:meta])* arrays: $arrays:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct Shape {
            pub cols: u32,
        }

        impl $crate::kernels::Launch for Shape {
            fn params(&self, at: &$crate::kernels::At) -> Params {
                Params::of(at, self.cols)
            }

            fn workgroups(&self, p: &Params, _: $crate::storage::format::Format) -> [u32; 3] {
                p.workgroups()
            }

            fn cost(&self, p: &Params, _: $crate::storage::format::Format) -> $crate::kernels::Cost {
                let bytes = $crate::kernels::cost::floats($arrays * u64::from(p.n));
                $crate::kernels::Cost::one_round(p.workgroups(), bytes)
            }
        }
    };
}
use element_wise;

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

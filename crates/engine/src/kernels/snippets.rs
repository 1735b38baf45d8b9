//! The WGSL a kernel is compiled from: its own file, preceded by the shared
//! snippets it calls — the weight format's (`shaders/format_*.wgsl`: `Word`,
//! `w_load`, `w_unpack`), `shaders/ln_stats.wgsl`, `shaders/row_in_x.wgsl`, `shaders/split_k.wgsl`, `shaders/row_weights.wgsl`,
//! `shaders/row_dot.wgsl`, `shaders/split_dot.wgsl`, `shaders/qkv_pair.wgsl`, `shaders/kv_slot.wgsl`, `shaders/grid_1d.wgsl`, `shaders/store_row.wgsl`,
//! the uniforms kernels share (`shaders/lm_head_params.wgsl`,
//! `shaders/attention_params.wgsl`), `shaders/turned.wgsl`, `shaders/gated.wgsl` and the self-test's fault hook,
//! `shaders/fault.wgsl`.
//! Which ones, and which pipeline constants (`override`s) the result
//! declares, are read from the WGSL itself, so no list has to be kept in step
//! with the shaders: a kernel needs a snippet exactly when it names one of the
//! functions or aliases the snippet defines.

use crate::storage::format::Format;

/// The LayerNorm statistics the kernels that start with one share.
const LN_STATS: &str = include_str!("../../../../shaders/ln_stats.wgsl");

/// Where the cpu profile's fused decode kernels keep their normalised row: x's spare rows.
const ROW_IN_X: &str = include_str!("../../../../shaders/row_in_x.wgsl");

/// The split-k layout of the projections shaped for real GPUs.
const SPLIT_K: &str = include_str!("../../../../shaders/split_k.wgsl");

/// One invocation's weights of a row, a word at a time (matvec_residual, the split kernels).
const ROW_WEIGHTS: &str = include_str!("../../../../shaders/row_weights.wgsl");
/// The cpu profile's decode dot products, a weight word per invocation (which call the kernel's `input`).
const ROW_DOT: &str = include_str!("../../../../shaders/row_dot.wgsl");
/// The single-row split kernels' dot products (which call the kernel's `input`).
const SPLIT_DOT: &str = include_str!("../../../../shaders/split_dot.wgsl");

/// How rms_qkv and rms_qkv_split turn a rotary pair.
const QKV_PAIR: &str = include_str!("../../../../shaders/qkv_pair.wgsl");

/// Where a decode kernel that computes qkv writes a column (and a K/V column in the cache).
const KV_SLOT: &str = include_str!("../../../../shaders/kv_slot.wgsl");

/// The flat index (and uniform) of the kernels with one invocation per element.
const GRID_1D: &str = include_str!("../../../../shaders/grid_1d.wgsl");

/// How the prefill matmuls (matmul, matmul_tiled) write a row of their 4 × 4 blocks.
const STORE_ROW: &str = include_str!("../../../../shaders/store_row.wgsl");

/// The uniform of lm_head and lm_head_split.
const LM_HEAD_PARAMS: &str = include_str!("../../../../shaders/lm_head_params.wgsl");

/// The uniform of attention, attention_probs and attention_split.
const ATTENTION_PARAMS: &str = include_str!("../../../../shaders/attention_params.wgsl");

/// A rotary pair turned by an angle: rope's, kv_renumber's and qkv_pair's.
const TURNED: &str = include_str!("../../../../shaders/turned.wgsl");

/// silu(g) · u: the SwiGLU kernels' activation.
const GATED: &str = include_str!("../../../../shaders/gated.wgsl");

/// The self-test's fault hook every kernel stores its outputs through.
const FAULT: &str = include_str!("../../../../shaders/fault.wgsl");

/// The value of `const NAME: u32 = Vu;` in `src`, if it declares one (tests
/// check the cost model's copies of loop counts against the shaders).
#[cfg(test)]
pub fn constant(src: &str, name: &str) -> Option<u64> {
    let code = code(src);
    let at = code.find(&format!("const {name}: u32 = "))?;
    let rest = &code[at..];
    let value = rest.split('=').nth(1)?.split(';').next()?.trim().trim_end_matches('u');
    value.parse().ok()
}

/// `src` with its comments removed (a name in a comment is not a use).
fn code(src: &str) -> String {
    src.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `code` names `name` as a whole identifier.
fn mentions(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The identifiers following `keyword ` in `code` (`fn`, `alias`, `override`).
fn declared<'a>(code: &'a str, keyword: &str) -> Vec<&'a str> {
    let key = format!("{keyword} ");
    code.match_indices(&key)
        .filter(|(i, _)| !code[..*i].chars().next_back().is_some_and(is_ident))
        .map(|(i, _)| {
            let rest = &code[i + key.len()..];
            &rest[..rest.find(|c| !is_ident(c)).unwrap_or(rest.len())]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Whether `user` calls a function or names an alias or struct that `snippet` defines.
fn needs(user: &str, snippet: &str) -> bool {
    let defined = code(snippet);
    let names = ["fn", "alias", "struct"].into_iter().flat_map(|k| declared(&defined, k));
    let user = code(user);
    names.into_iter().any(|name| mentions(&user, name))
}

/// Whether a kernel's WGSL lays its workgroups out by a split layout (reads
/// `wide` from its parameters): its cases run in every layout.
pub fn takes_layout(kernel: &str) -> bool {
    mentions(&code(kernel), "wide")
}

/// Whether a kernel's WGSL reads a weight matrix (names the format's `Word`,
/// `w_load` or `w_unpack`).
pub fn calls_format(kernel: &str) -> bool {
    needs(kernel, Format::F32.snippet())
}

/// `kernel` preceded by every snippet it needs, directly or through another
/// snippet, with weights in `format`.
pub fn assemble(kernel: &str, format: Format) -> String {
    let snippets = [
        format.snippet(),
        ROW_IN_X,
        LN_STATS,
        SPLIT_K,
        ROW_WEIGHTS,
        ROW_DOT,
        SPLIT_DOT,
        QKV_PAIR,
        KV_SLOT,
        GRID_1D,
        STORE_ROW,
        LM_HEAD_PARAMS,
        ATTENTION_PARAMS,
        TURNED,
        GATED,
        FAULT,
    ];
    let mut taken = vec![false; snippets.len()];
    let mut source = kernel.to_string();
    loop {
        let next = (0..snippets.len()).find(|&i| !taken[i] && needs(&source, snippets[i]));
        let Some(i) = next else { break };
        taken[i] = true;
        source = format!("{}\n{source}", snippets[i]);
    }
    source
}

/// The pipeline-overridable constants `source` declares.
pub fn overrides(source: &str) -> Vec<String> {
    declared(&code(source), "override").into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Kernel;

    #[test]
    fn each_kernel_takes_the_snippets_it_calls_and_no_other() {
        let has = |k: Kernel, what: &str| k.source_for(Format::Int4).contains(what);
        let ln = "fn normalise_row";
        let split = "fn split_dot";
        assert!(has(Kernel::MatmulSplit, "fn reduce_slices") && !has(Kernel::MatmulSplit, split));
        let format = "alias Word";
        assert!(has(Kernel::LnQkvSplit, ln) && has(Kernel::LnQkvSplit, split));
        assert!(has(Kernel::LnQkvSplit, format));
        assert!(has(Kernel::LnQkv, ln) && !has(Kernel::LnQkv, split));
        let in_x = "fn row_in_x";
        assert!(has(Kernel::LnQkv, in_x) && has(Kernel::RmsSwiglu, in_x));
        assert!(!has(Kernel::LnQkvSplit, in_x) && !has(Kernel::RmsSwigluSplit, in_x));
        assert!(has(Kernel::MatvecResidualSplit, split) && !has(Kernel::MatvecResidualSplit, ln));
        assert!(!has(Kernel::Attention, format) && !has(Kernel::Attention, ln));
        assert!(has(Kernel::LmHeadSplit, format) && !has(Kernel::LmHeadSplit, ln));
        assert!(Kernel::Embedding.reads_weights() && !Kernel::Gelu.reads_weights());
        assert!(!Kernel::BlockSum.reads_weights());
        let (grid, elements) = ("fn grid_1d_index", "struct Elements");
        assert!(has(Kernel::Gelu, grid) && has(Kernel::Gelu, elements));
        assert!(has(Kernel::KvWrite, grid) && !has(Kernel::LmHead, grid));
        let gated = "fn gated";
        assert!(has(Kernel::Swiglu, gated) && has(Kernel::RmsSwigluSplit, gated));
        assert!(has(Kernel::RmsSwiglu, gated) && !has(Kernel::Gelu, gated));
        let turned = "fn turned";
        assert!(has(Kernel::Rope, turned) && has(Kernel::KvRenumber, turned));
        assert!(has(Kernel::RmsQkv, turned) && has(Kernel::RmsQkvSplit, turned));
        assert!(!has(Kernel::Attention, turned) && !has(Kernel::Swiglu, turned));
        let head = "struct LmHeadParams";
        assert!(has(Kernel::LmHead, head) && has(Kernel::LmHeadSplit, head));
        assert!(!has(Kernel::Matmul, head));
        let att = "struct AttentionParams";
        assert!(has(Kernel::AttentionProbs, att) && has(Kernel::AttentionSplit, att));
        assert!(!has(Kernel::AttentionCombine, att));
        // Every kernel stores what it computes through the fault hook.
        assert!(Kernel::ALL.iter().all(|k| has(*k, "override FAULT")));
        // A name inside a comment is no use of it.
        assert!(!needs("// calls normalise_row(", LN_STATS));
        assert!(!needs("fn main() { let normalise_rows = 1; }", LN_STATS));
    }

    #[test]
    fn overrides_are_read_from_the_source() {
        assert_eq!(Kernel::Matmul.overrides(Format::F32), ["FAULT"]);
        assert_eq!(Kernel::Gelu.overrides(Format::F32), ["FAULT", "WG"]);
        let mut split = Kernel::AttentionSplit.overrides(Format::F32);
        split.sort();
        assert_eq!(split, ["CHUNK", "FAULT", "WG"]);
        assert_eq!(overrides("// override NOT\noverride A: u32 = 1u;"), ["A"]);
    }
}

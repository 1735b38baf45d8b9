//! The buffers a plan's dispatches bind, named by their role in the forward
//! pass ([`plan`](super::plan) lists the dispatches; `ops.rs` resolves each
//! role to a session's buffer).

/// A buffer a dispatch binds, by its role in the forward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    /// The activations (`Scratch`).
    Tokens,
    X,
    Xb,
    Qkv,
    Y,
    Proj,
    Fc,
    /// SwiGLU's output (the Llama family's MLP).
    Act,
    Parts,
    /// A heavy-hitter session's attention weights of a pass and its
    /// running totals per slot (`kv_mass`).
    Probs,
    Mass,
    /// A renumbering session's slots whose keys turn back one position (`kv_renumber`).
    Renumbered,
    /// The position embedding, `ln_f`, and shard `i` of the token embedding
    /// and of the LM head (the embedding's own when tied).
    Wpe,
    /// Every position's rotary turns (the Llama family).
    Turns,
    LnF,
    Wte(usize),
    Head(usize),
    /// Layer `l`'s weight of this role.
    Layer(usize, Weight),
    /// Sequence `s`'s cache of layer `l` (`s` is 0 in a single session's pass).
    Key(usize, usize),
    Value(usize, usize),
    /// The session's logits.
    Logits,
}

/// A block's weights, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    Ln1,
    CAttn,
    CAttnBias,
    AttnProj,
    AttnProjBias,
    Ln2,
    CFc,
    CFcBias,
    MlpProj,
    MlpProjBias,
}

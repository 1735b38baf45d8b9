//! Speculative decoding (issue 35): a cheap draft proposes tokens, the target
//! checks several in one pass. `accept` is the rule that keeps the target's
//! distribution exact; `run` the generation loop on two sessions of any
//! engine. Drafts: a smaller model sharing the tokenizer, or the target's own
//! first blocks read through `ln_f` and the LM head (`Model::first_blocks`:
//! self-speculation, the logit lens as a draft).

pub mod accept;
mod run;

pub use run::{generate, Outcome, Round};

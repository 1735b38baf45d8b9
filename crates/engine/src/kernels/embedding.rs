//! `shaders/embedding.wgsl`: token + position embedding.

use bytemuck::{Pod, Zeroable};

use super::cost::{floats, invocations, matrix_bytes, neighbouring};
use super::{At, Cost, Launch, WG};
use crate::storage::format::{Channels, Format};
use crate::storage::matrix::Matrix;

/// Mirror of the WGSL `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Params {
    pub n_rows: u32,
    pub n_embd: u32,
    pub pos0: u32,
    /// First vocabulary row of this shard of `wte` (0 when unsplit).
    pub v0: u32,
    /// Vocabulary rows in this shard.
    pub n_vocab: u32,
    /// First row of `tokens` and `x` the dispatch works on (a batch's sequence).
    pub row0: u32,
    /// 1: add the position table (GPT-2); 0: rotary positions, none.
    pub positions: u32,
    pub _pad2: u32,
}

/// x[row, :] = wte[tokens[row], :] + wpe[pos0 + row, :]  for the rows whose
/// token lies in the shard `wte` = rows `v0..v0 + wte.rows` of the embedding
/// (the others are left as they are: another shard's dispatch writes them).
/// The shader's `row0` is the caller's slicing here: pass rows `row0..` of `tokens` and `x`.
pub fn run_cpu(
    tokens: &[u32], // (n_rows)
    wte: &Matrix,   // (n_vocab, n_embd) in its format: rows v0.. of the embedding
    v0: usize,
    wpe: &[f32], // (n_positions, n_embd), or empty: no position table (rotary models)
    pos0: usize,
    x: &mut [f32], // (n_rows, n_embd)
) {
    let n_embd = wte.cols;
    let mut buf = Vec::new();
    for (row, &token) in tokens.iter().enumerate() {
        let Some(local) = (token as usize).checked_sub(v0).filter(|&t| t < wte.rows) else {
            continue;
        };
        let te = wte.row(local, &mut buf);
        let out = &mut x[row * n_embd..][..n_embd];
        match wpe.is_empty() {
            true => out.copy_from_slice(te),
            false => {
                let pe = &wpe[(pos0 + row) * n_embd..][..n_embd];
                out.iter_mut().enumerate().for_each(|(c, o)| *o = te[c] + pe[c]);
            }
        }
    }
}

/// One dispatch: the shard of `wte` holding vocabulary rows `v0..v0 + n_vocab`.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub v0: u32,
    pub n_vocab: u32,
}

impl Launch for Shape {
    fn params(&self, at: &At) -> Params {
        Params {
            n_rows: at.n_rows,
            n_embd: at.n_embd(),
            pos0: at.pos0,
            v0: self.v0,
            n_vocab: self.n_vocab,
            row0: at.row0,
            positions: u32::from(at.config.llama().is_none()),
            _pad2: 0,
        }
    }

    /// Dispatch size: one thread per element.
    fn workgroups(&self, p: &Params, _: Format) -> [u32; 3] {
        super::grid_1d(p.n_rows as usize * p.n_embd as usize)
    }

    /// The token id, then the row it names (two rounds); every row of the
    /// shard may be asked for, so the bytes count the tokens' rows only.
    fn cost(&self, p: &Params, format: Format) -> Cost {
        let (rows, e) = (u64::from(p.n_rows), u64::from(p.n_embd));
        let row = matrix_bytes(format, 1, e, Channels::Rows);
        Cost::plain(invocations(self.workgroups(p, format), WG), 2, rows * (4 + floats(e)))
            .with_weights(rows * row, neighbouring(1, format))
    }
}

// lm_head_split (real GPUs): logits[r, v0 + v] = x[row0 + r, :] · lm_head[v, :],
// each vocabulary row read by LANES invocations side by side: neighbouring
// invocations read neighbouring words of the row (coalesced), each with
// WORDS words in flight per round, and the lanes' partial sums meet in
// workgroup memory. A workgroup takes ROWS vocabulary rows of one logits row
// and first stages that row of x in workgroup memory. As lm_head, the head
// may be split by vocabulary rows over several bindings (v0, n_vocab).
// `Word`, `w_load`, `w_unpack` and `PER_WORD` come from the weight format's
// snippet. CPU twin: lm_head's (the same dot products, summed in another order).

@group(0) @binding(0) var<uniform> p: LmHeadParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;            // (n_rows, n_embd) after ln_f
@group(0) @binding(2) var<storage, read> w: array<Word>;           // (n_vocab, n_embd) head rows v0.., in the weight format
@group(0) @binding(3) var<storage, read_write> logits: array<f32>; // (n_out, vocab_size)

override WG: u32 = 256u;
override ROWS: u32 = 8u;  // vocabulary rows per workgroup (`lm_head_split::ROWS` in Rust)
const WORDS: u32 = 4u;    // words in flight per invocation and round (`lm_head_split::WORDS`)
const MAX_EMBD: u32 = 2048u; // `LN_MAX_EMBD` in Rust

var<workgroup> xs: array<f32, MAX_EMBD>; // (n_embd) this logits row's x
var<workgroup> lane_sums: array<f32, WG>; // (ROWS, LANES) partial dot products

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let r = wid.y; // dispatched with exactly n_out rows of workgroups
    for (var c = tid; c < p.n_embd; c = c + WG) {
        xs[c] = x[(p.row0 + r) * p.n_embd + c];
    }
    workgroupBarrier();
    let lanes = WG / ROWS;
    let lane = tid % lanes;
    let v = wid.x * ROWS + tid / lanes;
    var acc = 0.0;
    if (v < p.n_vocab) {
        if (p.n_embd % PER_WORD == 0u) {
            // Rows are whole words: word j of row v holds elements j·PER_WORD …
            let per_row = p.n_embd / PER_WORD;
            let first = v * per_row;
            // WORDS (4) words in flight, each in a value of its own (no
            // private array filled in a loop: see shaders/split_dot.wgsl).
            for (var j0 = lane; j0 < per_row; j0 = j0 + WORDS * lanes) {
                let j1 = j0 + lanes;
                let j2 = j1 + lanes;
                let j3 = j2 + lanes;
                let w0 = head_word(first, j0, per_row);
                let w1 = head_word(first, j1, per_row);
                let w2 = head_word(first, j2, per_row);
                let w3 = head_word(first, j3, per_row);
                acc = add_word(acc, w0, first, j0, per_row, v);
                acc = add_word(acc, w1, first, j1, per_row, v);
                acc = add_word(acc, w2, first, j2, per_row, v);
                acc = add_word(acc, w3, first, j3, per_row, v);
            }
        } else {
            for (var c = lane; c < p.n_embd; c = c + lanes) {
                acc = acc + xs[c] * w_load(v * p.n_embd + c, v);
            }
        }
    }
    lane_sums[tid] = acc;
    workgroupBarrier();
    for (var h = lanes / 2u; h > 0u; h = h / 2u) {
        if (lane < h) {
            lane_sums[tid] = lane_sums[tid] + lane_sums[tid + h];
        }
        workgroupBarrier();
    }
    if (lane == 0u && v < p.n_vocab) {
        logits[r * p.vocab_size + p.v0 + v] = faulted(lane_sums[tid]);
    }
}

// Word j of the head row starting at word `first` (0 past the row).
fn head_word(first: u32, j: u32, per_row: u32) -> Word {
    if (j < per_row) {
        return w[first + j];
    }
    return Word();
}

// acc plus word j's PER_WORD products with the staged x (nothing past the row).
fn add_word(acc: f32, word: Word, first: u32, j: u32, per_row: u32, v: u32) -> f32 {
    var a = acc;
    if (j < per_row) {
        let ws = w_unpack(word, (first + j) * PER_WORD, v, 0u);
        for (var t = 0u; t < PER_WORD; t = t + 1u) {
            a = a + xs[j * PER_WORD + t] * ws[t];
        }
    }
    return a;
}

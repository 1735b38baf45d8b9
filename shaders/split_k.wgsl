// split_k: the dot products of the projections shaped for real GPUs
// (ln_qkv_split, matvec_residual_split, ln_fc_gelu_split, matmul_split),
// which declare `w` (the weights, Conv1D [in, out] layout) and `WG`; the
// single-row kernels sum with `split_dot` (shaders/split_dot.wgsl).
// A workgroup's WG invocations are `wide` column groups side by side times
// WG / wide slices of k. Invocation (g, s) = (tid % wide, tid / wide) owns
// the PER_WORD columns of one weight word in every row, and the rows
// s, s + slices, s + 2·slices, …: neighbouring invocations read neighbouring
// words of a row (coalesced), each round of loads has several rows in flight,
// and the slices' partial sums meet in workgroup memory (a tree of
// log2(slices) steps). The split kernels' CPU twins are the unsplit ones:
// the same sums, added in another order.

const UNROLL: u32 = 4u; // rows whose weights matmul_split loads before using any (split_dot: DOT_ROWS)

var<workgroup> slice_sums: array<vec4<f32>, WG>; // (WG) partial sums, four columns at a time

// First column of invocation `tid`'s word in workgroup `group`.
fn split_col0(group: u32, tid: u32, wide: u32) -> u32 {
    return (group * wide + tid % wide) * PER_WORD;
}

// Every slice's partial sums of the same columns added up, four columns at a
// time (a tree over the slices): the totals of the invocation's columns.
// Call from uniform control flow.
fn reduce_slices(tid: u32, wide: u32, acc: array<f32, PER_WORD>) -> array<f32, PER_WORD> {
    var total: array<f32, PER_WORD>;
    let slices = WG / wide;
    for (var q = 0u; q < PER_WORD; q = q + 4u) {
        var v = vec4<f32>(0.0);
        for (var t = 0u; t < 4u && q + t < PER_WORD; t = t + 1u) {
            v[t] = acc[q + t];
        }
        slice_sums[tid] = v;
        workgroupBarrier();
        for (var h = slices / 2u; h > 0u; h = h / 2u) {
            if (tid < h * wide) {
                slice_sums[tid] = slice_sums[tid] + slice_sums[tid + h * wide];
            }
            workgroupBarrier();
        }
        let sum = slice_sums[tid % wide];
        for (var t = 0u; t < 4u && q + t < PER_WORD; t = t + 1u) {
            total[q + t] = sum[t];
        }
        workgroupBarrier(); // before slice_sums is reused
    }
    return total;
}

// The first sum of invocation tid ^ 1, its column group's neighbour (`wide`
// even): the other column of a neighbouring pair (rms_qkv_split's rotary
// pairs, rms_swiglu_split's gate and up) when a word holds one weight.
// After `reduce_slices` (which leaves `slice_sums` free). Call from uniform
// control flow.
fn neighbour_sum(tid: u32, v: f32) -> f32 {
    slice_sums[tid].x = v;
    workgroupBarrier();
    return slice_sums[tid ^ 1u].x;
}

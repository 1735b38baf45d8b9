// matmul_tiled (prefill, real GPUs): out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]
// A workgroup of 16 × 16 invocations computes a 64 × 64 block of outputs,
// 4 × 4 per invocation in registers, over tiles of 16 rows of k staged in
// workgroup memory: every element of x and w is read from global memory once
// per workgroup (matmul reads it once per invocation that needs it), each
// load coalesced (neighbouring invocations take neighbouring k of x, and
// neighbouring columns of w). Each output still adds its k products in
// order 0..k. `Word` and `w_load` come from the weight format's snippet,
// `store_row` from shaders/store_row.wgsl.
// CPU twin: matmul's.

struct Params {
    m: u32, // rows of x (tokens)
    k: u32, // inputs
    n: u32, // outputs
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // (m, k)
@group(0) @binding(2) var<storage, read> w: array<Word>;        // (k, n) in the weight format
@group(0) @binding(3) var<storage, read> bias: array<f32>;      // (n)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // (m, n)

const SIDE: u32 = 16u;       // invocations along each axis of the workgroup
const TILE: u32 = 4u;        // outputs per invocation along each axis
const BLOCK: u32 = 64u;      // SIDE · TILE outputs per workgroup along each axis
const DEPTH: u32 = 16u;      // rows of k per staged tile
const LOADS: u32 = 4u;       // BLOCK · DEPTH / (SIDE · SIDE) elements each invocation stages

var<workgroup> xs: array<f32, BLOCK * DEPTH>;        // (BLOCK rows, DEPTH) of x
var<workgroup> ws: array<vec4<f32>, DEPTH * SIDE>;   // (DEPTH, BLOCK columns) of w, widened, 4 columns a vec4

// Accumulators and tiles live in named vectors and every loop that indexes
// them runs a constant count: a GPU's compiler then keeps them in registers
// (a private array indexed in a loop it cannot unroll goes to slow local
// memory: this kernel once took 4 ms a dispatch on an H200 that way).
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let tid = lid.y * SIDE + lid.x;
    let row0 = wid.y * BLOCK;
    let col0 = wid.x * BLOCK;
    var acc0 = vec4<f32>(0.0); // row lid.y · TILE + 0, columns lid.x · TILE ..+4
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let a0 = lid.y * TILE * DEPTH; // this invocation's first row of xs
    for (var k0 = 0u; k0 < p.k; k0 = k0 + DEPTH) {
        // Stage both tiles, zero past the edges (the products past k then add 0).
        for (var i = 0u; i < LOADS; i = i + 1u) {
            let e = tid + i * SIDE * SIDE;
            let xr = e / DEPTH;
            let xk = e % DEPTH;
            var xv = 0.0;
            if (row0 + xr < p.m && k0 + xk < p.k) {
                xv = x[(row0 + xr) * p.k + k0 + xk];
            }
            let wk = e / BLOCK;
            let wc = e % BLOCK;
            var wv = 0.0;
            if (k0 + wk < p.k && col0 + wc < p.n) {
                wv = w_load((k0 + wk) * p.n + col0 + wc, col0 + wc);
            }
            xs[e] = xv;
            ws[wk * SIDE + wc / TILE][wc % TILE] = wv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < DEPTH; kk = kk + 1u) {
            let b = ws[kk * SIDE + lid.x];
            acc0 = acc0 + xs[a0 + kk] * b;
            acc1 = acc1 + xs[a0 + DEPTH + kk] * b;
            acc2 = acc2 + xs[a0 + 2u * DEPTH + kk] * b;
            acc3 = acc3 + xs[a0 + 3u * DEPTH + kk] * b;
        }
        workgroupBarrier(); // every invocation is done with the tiles before they are restaged
    }
    let row = row0 + lid.y * TILE;
    let col = col0 + lid.x * TILE;
    store_row(row, col, acc0);
    store_row(row + 1u, col, acc1);
    store_row(row + 2u, col, acc2);
    store_row(row + 3u, col, acc3);
}


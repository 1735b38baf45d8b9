// matmul_tiled (prefill, real GPUs): out[m, n] = sum_k x[m, k] * w[k, n] + bias[n]
// A workgroup of 16 × 16 invocations computes a 64 × 64 block of outputs,
// 4 × 4 per invocation in registers, over tiles of 16 rows of k staged in
// workgroup memory: every element of x and w is read from global memory once
// per workgroup (matmul reads it once per invocation that needs it), each
// load coalesced (neighbouring invocations take neighbouring k of x, and
// neighbouring columns of w). Each output still adds its k products in
// order 0..k. `Word` and `w_load` come from the weight format's snippet.
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

var<workgroup> xs: array<f32, BLOCK * DEPTH>; // (BLOCK rows, DEPTH) of x
var<workgroup> ws: array<f32, DEPTH * BLOCK>; // (DEPTH, BLOCK columns) of w, widened

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let tid = lid.y * SIDE + lid.x;
    let row0 = wid.y * BLOCK;
    let col0 = wid.x * BLOCK;
    var acc: array<array<f32, 4>, 4>; // (row, col), zero-initialised
    for (var k0 = 0u; k0 < p.k; k0 = k0 + DEPTH) {
        // Stage both tiles: all LOADS · 2 loads of an invocation before any is used.
        var xv: array<f32, LOADS>;
        var wv: array<f32, LOADS>;
        for (var i = 0u; i < LOADS; i = i + 1u) {
            let e = tid + i * SIDE * SIDE;
            let xr = e / DEPTH;
            let xk = e % DEPTH;
            if (row0 + xr < p.m && k0 + xk < p.k) {
                xv[i] = x[(row0 + xr) * p.k + k0 + xk];
            }
            let wk = e / BLOCK;
            let wc = e % BLOCK;
            if (k0 + wk < p.k && col0 + wc < p.n) {
                wv[i] = w_load((k0 + wk) * p.n + col0 + wc, col0 + wc);
            }
        }
        for (var i = 0u; i < LOADS; i = i + 1u) {
            let e = tid + i * SIDE * SIDE;
            xs[e] = xv[i];
            ws[e] = wv[i];
        }
        workgroupBarrier();
        let depth = min(DEPTH, p.k - k0);
        for (var kk = 0u; kk < depth; kk = kk + 1u) {
            var a: array<f32, 4>;
            var b: array<f32, 4>;
            for (var t = 0u; t < TILE; t = t + 1u) {
                a[t] = xs[(lid.y * TILE + t) * DEPTH + kk];
                b[t] = ws[kk * BLOCK + lid.x * TILE + t];
            }
            for (var r = 0u; r < TILE; r = r + 1u) {
                for (var c = 0u; c < TILE; c = c + 1u) {
                    acc[r][c] = acc[r][c] + a[r] * b[c];
                }
            }
        }
        workgroupBarrier(); // every invocation is done with the tiles before they are restaged
    }
    for (var r = 0u; r < TILE; r = r + 1u) {
        for (var c = 0u; c < TILE; c = c + 1u) {
            let row = row0 + lid.y * TILE + r;
            let col = col0 + lid.x * TILE + c;
            if (row < p.m && col < p.n) {
                out[row * p.n + col] = acc[r][c] + bias[col];
            }
        }
    }
}

// transformers.js (@huggingface/transformers on onnxruntime-web), the engine a
// web developer would pick instead of ours, on the same models in the same
// headless Chromium: load, warm first token and decode ms/token, greedy, as a
// page measures them. Figures only. Models: ONNX exports made by
// tools/bench/export_onnx.py: fp32 (`onnx/model.onnx`), fp16
// (`model_fp16.onnx`) and q8 (`model_quantized.onnx`, int8 weights, one
// scale per tensor: transformers.js's default on the CPU); DTYPE picks one. ISOLATED=1
// serves the page cross-origin isolated, as ours is served (onnxruntime-web
// may then use threads of its own: the figure names how many).
//   TJS=DIR/node_modules/@huggingface/transformers MODELS=DIR CHROMIUM=... \
//     PLAYWRIGHT_CORE=... node tools/bench/transformers_js.mjs NAME [cpu|webgpu] [TOKENS] [fp32|fp16|q8]
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const [name, device = 'cpu', tokens = '32', dtype = 'fp32'] = process.argv.slice(2);
const TJS = join(process.env.TJS, 'dist');
const MODELS = process.env.MODELS;
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
import { env, AutoTokenizer, AutoModelForCausalLM } from '/tjs/transformers.min.js';
env.allowRemoteModels = false; env.allowLocalModels = true; env.localModelPath = '/models/';
env.backends.onnx.wasm.wasmPaths = '/tjs/';
window.bench = async (name, device, n, dtype) => {
  const t0 = performance.now();
  const tokenizer = await AutoTokenizer.from_pretrained(name);
  const model = await AutoModelForCausalLM.from_pretrained(name, { device: device === 'cpu' ? 'wasm' : 'webgpu', dtype });
  const load = performance.now() - t0;
  const inputs = tokenizer('The capital of France is');
  const run = async (k) => {
    const s = performance.now();
    const out = await model.generate({ ...inputs, max_new_tokens: k, min_new_tokens: k, do_sample: false });
    return [performance.now() - s, out];
  };
  const [cold] = await run(1);
  const firsts = [];
  for (let i = 0; i < 3; i++) firsts.push((await run(1))[0]);
  const [all, out] = await run(n + 1);
  const first = firsts.sort((a, b) => a - b)[1];
  const threads = env.backends.onnx.wasm.numThreads;
  return { load, cold, first, perToken: (all - first) / n, text: tokenizer.decode(out[0]), threads, isolated: crossOriginIsolated };
};
</script>`;

const isolation = process.env.ISOLATED ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' } : {};
const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  let file = null;
  if (path === '/') return res.writeHead(200, { 'content-type': 'text/html', ...isolation }).end(PAGE);
  if (path.startsWith('/tjs/')) file = normalize(join(TJS, path.slice(5)));
  if (path.startsWith('/models/')) file = normalize(join(MODELS, path.slice(8)));
  const body = file && await readFile(file).catch(() => null);
  if (!body) return res.writeHead(404).end('not found');
  res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream', ...isolation }).end(body);
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage', ...(device === 'webgpu' ? ['--enable-unsafe-webgpu'] : [])],
});
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/`);
await page.waitForFunction(() => window.bench, null, { timeout: 60_000 });
const r = await page.evaluate(([n, d, k, t]) => window.bench(n, d, k, t), [name, device, Number(tokens), dtype]);
console.log(`transformers.js ${device} ${dtype} ${name}: loaded ${(r.load / 1000).toFixed(1)} s; cold first token ${r.cold.toFixed(0)} ms; ` +
  `warm first token ${r.first.toFixed(0)} ms (median of 3); decode ${r.perToken.toFixed(1)} ms/token over ${tokens} greedy tokens ` +
  `(cross-origin isolated: ${r.isolated}; onnxruntime threads: ${r.threads})`);
console.log(`  text: ${JSON.stringify(r.text.slice(0, 120))}`);
await browser.close();
server.close();

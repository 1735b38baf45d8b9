// Our page's CPU worker against transformers.js on the same model, round by
// round in one session (this machine's speed drifts from minute to minute, so
// only interleaved figures compare). Each round: our page served cross-origin
// isolated (`/`, where the worker may take a coworker) and under the sub-path
// that sets no headers (`/course/decode-lab/`, one worker), GENERATIONS greedy
// generations each, then tools/bench/transformers_js.mjs once. Figures only:
// decode ms/token as each page reports it, our first token (click → first chip,
// timed inside the page) and the ratio of medians. WEIGHTS is our page's
// weight format (`weights=`), DTYPE transformers.js's: f32 against fp32, f16
// against fp16, int8-tensor against q8 (8-bit weights, one scale per tensor)
// and int4 against q4 (4-bit weights in groups of 32, one scale each) are like
// for like in the weights; ACTIVATIONS=int8 (`activations=`) makes int8-tensor
// against q8 like for like in the products too (onnxruntime's dynamic
// quantization rounds each matmul's input to 8 bits, as ours does), where q4's
// MatMulNBits keeps f32 activations, as our int4 does without it.
//   DIST=dist MODEL=gpt2-124m-shape ONNX=gpt2-124m-shape TOKENS=32 ROUNDS=3 WEIGHTS=f32 DTYPE=fp32 \
//     TJS=... MODELS=... CHROMIUM=... PLAYWRIGHT_CORE=... node tools/bench/page_vs_tjs.mjs
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { serve } from '../../tests/e2e/server.mjs';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const dist = resolve(process.env.DIST || 'dist');
const model = process.env.MODEL || 'gpt2-124m-shape';
const onnx = process.env.ONNX || model;
const tokens = Number(process.env.TOKENS || 32);
const rounds = Number(process.env.ROUNDS || 3);
const generations = Number(process.env.GENERATIONS || 3);
const weights = process.env.WEIGHTS || 'auto';
const dtype = process.env.DTYPE || 'fp32';
const activations = process.env.ACTIVATIONS ? `&activations=${process.env.ACTIVATIONS}` : '';
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => xs.map((x) => x.toFixed(1)).join(', ');

const server = await serve(dist);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage'],
});

/** Our page at `base` on the CPU: GENERATIONS greedy runs of TOKENS tokens. */
async function ours(base) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const query = model === 'shakespeare' ? '' : `model=e2e-models/${model}/&`;
  await page.goto(`${server.url}${base}?${query}backend=cpu&weights=${weights}${activations}&prompt=The%20capital%20of%20France%20is&max_tokens=${tokens}&temperature=0`);
  await page.waitForSelector('[data-testid=confirm-yes], [data-testid=bar]', { timeout: 120_000 });
  if (await page.$('[data-testid=confirm-yes]')) await page.click('[data-testid=confirm-yes]');
  await page.waitForSelector('[data-testid=bar]', { timeout: 600_000 });
  const workers = await page.getAttribute('[data-testid=backend]', 'data-cpu-workers');
  const perToken = [], first = [], stepWorkers = [];
  for (let g = 0; g < generations; g++) {
    const ms = await page.evaluate(() => new Promise((done) => {
      const output = document.querySelector('[data-testid=output]');
      const seen = new MutationObserver(() => {
        if (!output.querySelector('.chip')) return;
        seen.disconnect();
        done(performance.now() - t0);
      });
      seen.observe(output, { childList: true, subtree: true });
      const t0 = performance.now();
      document.querySelector('[data-testid=generate]').click();
    }));
    await page.waitForFunction(() => !document.querySelector('[data-testid=generate]').disabled
      && document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 600_000 });
    const stats = await page.$eval('[data-testid=stats]', (e) => ({ ...e.dataset }));
    first.push(ms);
    perToken.push(1000 / Number(stats.tokensPerS));
    stepWorkers.push(stats.workers);
  }
  await page.close();
  return { perToken, first, workers: `${workers}; last steps on ${stepWorkers.join(', ')}` };
}

/** transformers.js on the ONNX export of the same model (its own script, its own browser). */
function theirs() {
  const out = execFileSync('node', [resolve('tools/bench/transformers_js.mjs'), onnx, 'cpu', String(tokens), dtype],
    { env: { ...process.env, ISOLATED: '1' }, encoding: 'utf8' });
  const perToken = Number(/decode ([\d.]+) ms\/token/.exec(out)?.[1]);
  const first = Number(/warm first token (\d+) ms/.exec(out)?.[1]);
  return { perToken, first };
}

const all = { isolated: [], subPath: [], theirs: [] };
for (let r = 1; r <= rounds; r++) {
  const a = await ours('');
  const b = await ours('course/decode-lab/');
  const t = theirs();
  all.isolated.push(...a.perToken);
  all.subPath.push(...b.perToken);
  all.theirs.push(t.perToken);
  console.log(`round ${r}: ours isolated (workers: ${a.workers}) ${fmt(a.perToken)} ms/token, first token ${fmt(a.first)} ms; ` +
    `sub-path (workers: ${b.workers}) ${fmt(b.perToken)} ms/token, first token ${fmt(b.first)} ms; ` +
    `transformers.js ${t.perToken.toFixed(1)} ms/token, warm first token ${t.first} ms`);
}
const them = median(all.theirs);
console.log(`${model}, ours ${weights}${activations ? ` × ${process.env.ACTIVATIONS} activations` : ''} against transformers.js ${dtype}, ${tokens} greedy tokens, medians: ours isolated ${median(all.isolated).toFixed(1)} ms/token ` +
  `(${(them / median(all.isolated)).toFixed(2)}× transformers.js), sub-path ${median(all.subPath).toFixed(1)} ` +
  `(${(them / median(all.subPath)).toFixed(2)}×), transformers.js ${them.toFixed(1)}; ` +
  `worst round: ${(Math.min(...all.theirs) / Math.max(...all.isolated, ...all.subPath)).toFixed(2)}×`);
await browser.close();
await server.close();

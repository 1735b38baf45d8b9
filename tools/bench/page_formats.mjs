// The quantization lesson's speed columns on a model, as a reader's page
// measures them (figures only, no asserts): our page served cross-origin
// isolated on the CPU backend (its worker), `?widget=quantization`, Measure
// every format; printed per row (each format, and on the CPU engine int8 and
// int4 with 8-bit activations): decode ms/token (median of the greedy steps
// after the first), prefill ms of the prompt, and each against f16's.
//   DIST=dist MODEL=gpt2-124m-shape STEPS=16 BACKEND=cpu CHROMIUM=... PLAYWRIGHT_CORE=... \
//     node tools/bench/page_formats.mjs
import { resolve } from 'node:path';
import { serve } from '../../tests/e2e/server.mjs';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const dist = resolve(process.env.DIST || 'dist');
const model = process.env.MODEL || 'gpt2-124m-shape';
const steps = Number(process.env.STEPS || 16);
const backend = process.env.BACKEND || 'cpu';

const server = await serve(dist);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage',
    ...(backend === 'webgpu' ? ['--enable-unsafe-webgpu'] : [])],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const query = model === 'shakespeare' ? '' : `model=e2e-models/${model}/&`;
// The held-out columns score 64 tokens where the model folder has a passage.
await page.goto(`${server.url}?${query}widget=quantization&backend=${backend}&max_tokens=${steps}` +
  '&heldout_tokens=64&prompt=The%20capital%20of%20France%20is');
await page.waitForSelector('[data-testid=confirm-yes], [data-testid=measure]', { timeout: 600_000 });
if (await page.$('[data-testid=confirm-yes]')) await page.click('[data-testid=confirm-yes]');
await page.waitForSelector('[data-testid=measure]:not([disabled])', { timeout: 600_000 });
const workers = await page.getAttribute('[data-testid=backend]', 'data-cpu-workers').catch(() => null);
const t0 = Date.now();
await page.click('[data-testid=measure]');
await page.waitForFunction(() => !document.querySelector('[data-testid=measure]').disabled
  && document.querySelectorAll('[data-testid=quant-row]').length > 0, null, { timeout: 3_600_000 });
const errors = await page.$$eval('[data-testid=error]', (es) => es.map((e) => e.textContent));
const rows = await page.$$eval('[data-testid=quant-row]', (rs) => rs.map((r) => ({
  name: r.querySelector('th').textContent.trim(),
  ...Object.fromEntries([...r.querySelectorAll('td')].map((td) => [td.dataset.col, td.textContent.trim()])),
})));
const f16 = rows.find((r) => r.name === 'f16');
console.log(`${model} on the page's ${backend} engine (workers: ${workers}), ${steps} greedy steps, measured in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
for (const r of rows) {
  const vs = (col) => (f16 ? `${(Number(r[col]) / Number(f16[col])).toFixed(2)}×` : '');
  console.log(`  ${r.name.padEnd(30)} ${r.bytes.padStart(10)}  decode ${r.ms.padStart(8)} ms/token (${vs('ms')} f16's)  ` +
    `prefill ${r.prefill.padStart(8)} ms (${vs('prefill')})  KL ${r.kl}  top-1 ${r.top1}`);
}
console.log(await page.textContent('[data-testid=quant-speed]'));
if (errors.length) console.log(`errors: ${errors.join(' | ')}`);
await browser.close();
await server.close();

// App benchmark (figures only, no asserts): cold load to interactive, first
// token, slider-to-repaint, decode tokens/s and the longest main-thread task
// per backend, and page weight. Run by `./tools/dev bench` after a release build.
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { serve } from './server.mjs';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const dist = resolve(process.env.DIST || 'dist');
const server = await serve(dist);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [backend, extra] of [['webgpu', ['--enable-unsafe-webgpu']], ['cpu', []]]) {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage', ...extra] });
  const page = await browser.newPage();
  await page.goto(server.url + '?max_tokens=64&temperature=0.8');
  await page.waitForSelector('[data-testid=bar]', { timeout: 180_000 });
  for (let r = 0; r < 2; r++) {
    const t0 = Date.now();
    await page.click('[data-testid=generate]');
    await page.waitForSelector('.chip', { state: 'attached' });
    const first = Date.now() - t0;
    await page.waitForFunction(() => document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 600_000 });
    const stats = await page.$eval('[data-testid=stats]', (e) => ({ ...e.dataset }));
    console.log(`${backend}: bundled, run ${r}: first token ${first} ms, ${Number(stats.tokensPerS).toFixed(1)} tokens/s = ${(1000/Number(stats.tokensPerS)).toFixed(1)} ms/token, step ${Number(stats.decodeMs).toFixed(2)} ms`);
  }
  await page.close();
  await gpt2Shape(browser, backend);
  await browser.close();
}
await server.close();
/** GPT-2 124M's shape (target/e2e-models/gpt2-124m-shape, made by `./tools/dev bench`):
 * load to ready, first token, decode rate and the longest main-thread task, as a user sees them. */
async function gpt2Shape(browser, backend) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => list.getEntries().forEach((e) => { window.__longest = Math.max(window.__longest, e.duration); }))
      .observe({ type: 'longtask', buffered: true });
  });
  await page.goto(server.url + '?model=e2e-models/gpt2-124m-shape/&prompt=The%20capital%20of%20France%20is&max_tokens=32&temperature=0.8');
  await page.waitForSelector('[data-testid=confirm-yes]', { timeout: 120_000 });
  const t0 = Date.now();
  await page.click('[data-testid=confirm-yes]');
  await page.waitForSelector('[data-testid=bar]', { timeout: 600_000 });
  const load = Date.now() - t0;
  const badge = await page.textContent('[data-testid=backend]');
  await page.evaluate(() => { window.__longest = 0; });
  const t1 = Date.now();
  await page.click('[data-testid=generate]');
  await page.waitForSelector('.chip', { state: 'attached', timeout: 600_000 });
  const first = Date.now() - t1;
  await page.waitForFunction(() => document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 600_000 });
  const stats = await page.$eval('[data-testid=stats]', (e) => ({ ...e.dataset }));
  const longest = await page.evaluate(() => window.__longest);
  const memory = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
  console.log(`${backend}: GPT-2-124M shape (${badge}): loaded ${(load / 1000).toFixed(1)} s after the yes; first token ${first} ms; ` +
    `decode ${Number(stats.tokensPerS).toFixed(2)} tokens/s = ${(1000 / Number(stats.tokensPerS)).toFixed(0)} ms/token (last step ${Number(stats.decodeMs).toFixed(0)} ms); ` +
    `longest main-thread task while generating 32 tokens ${longest.toFixed(0)} ms; JS heap ${(memory / 1e6).toFixed(0)} MB`);
  await page.close();
}


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
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage', ...extra],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => list.getEntries().forEach((e) => { window.__longest = Math.max(window.__longest, e.duration); }))
      .observe({ type: 'longtask', buffered: true });
  });
  await page.goto(server.url);
  await page.waitForSelector('[data-testid=bar]', { timeout: 180_000 });
  const interactive = await page.evaluate(() => performance.now());
  const loadLongest = await page.evaluate(() => window.__longest);
  // Slider to repaint: input event → DOM updated (MutationObserver) → next frame.
  const repaint = await page.evaluate(async () => {
    const input = document.querySelector('[data-testid=temperature]');
    const panel = document.querySelector('.distribution');
    const dom = [], frame = [];
    for (let i = 0; i < 50; i++) {
      const changed = new Promise((ok) => { const m = new MutationObserver(() => { m.disconnect(); ok(performance.now()); }); m.observe(panel, { subtree: true, attributes: true, childList: true, characterData: true }); });
      const t0 = performance.now();
      input.value = (0.5 + (i % 10) * 0.1).toFixed(2);
      input.dispatchEvent(new Event('input', { bubbles: true }));
      dom.push((await changed) - t0);
      await new Promise((ok) => requestAnimationFrame(() => ok()));
      frame.push(performance.now() - t0);
    }
    return { dom, frame };
  });
  await page.fill('[data-testid=temperature]', '0.8');
  await page.fill('[data-testid=max-tokens]', '64');
  await page.evaluate(() => { window.__longest = 0; });
  const t0 = Date.now();
  await page.click('[data-testid=generate]');
  await page.waitForSelector('.chip', { state: 'attached', timeout: 60_000 });
  const firstToken = Date.now() - t0;
  await page.waitForFunction(() => document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 600_000 });
  const stats = await page.$eval('[data-testid=stats]', (e) => ({ ...e.dataset }));
  const genLongest = await page.evaluate(() => window.__longest);
  console.log(`${backend}: interactive ${interactive.toFixed(0)} ms after navigation (longest task while loading ${loadLongest.toFixed(0)} ms)`);
  console.log(`${backend}: first token ${firstToken} ms after Generate; prefill ${Number(stats.prefillMs).toFixed(1)} ms; decode ${Number(stats.tokensPerS).toFixed(1)} tokens/s (last step ${Number(stats.decodeMs).toFixed(1)} ms)`);
  console.log(`${backend}: slider → bars updated ${median(repaint.dom).toFixed(2)} ms, → next frame ${median(repaint.frame).toFixed(2)} ms (medians of 50)`);
  console.log(`${backend}: longest main-thread task while generating 64 tokens ${genLongest.toFixed(0)} ms (0 = none over 50 ms)`);
  await browser.close();
}
await server.close();

const weigh = (files) => files.reduce(([r, g], f) => { const b = readFileSync(f); return [r + b.length, g + gzipSync(b, { level: 9 }).length]; }, [0, 0]);
const kib = ([r, g]) => `${(r / 1024).toFixed(0)} KiB raw, ${(g / 1024).toFixed(0)} KiB gzip`;
const top = readdirSync(dist).map((f) => join(dist, f));
const model = readdirSync(join(dist, 'models/shakespeare')).map((f) => join(dist, 'models/shakespeare', f));
console.log(`page weight: wasm ${kib(weigh(top.filter((f) => f.endsWith('.wasm'))))}; js ${kib(weigh(top.filter((f) => f.endsWith('.js'))))}; ` +
  `model ${kib(weigh(model.filter((f) => !f.endsWith('.png') && !f.endsWith('.md'))))}`);

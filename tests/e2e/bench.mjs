// App benchmark (figures only, no asserts): cold load to interactive, first
// token, slider-to-repaint, decode tokens/s and the longest main-thread task
// per backend, and page weight. Run by `./tools/dev bench` after a release build.
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { serve } from './server.mjs';
import { insideTheModel } from './bench_inside.mjs';

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
  await costLessons(browser, backend);
  await insideTheModel(browser, backend, server.url);
  await gpt2Shape(browser, backend);
  await browser.close();
}

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

/** The cost lessons as a reader runs them: their own figures, and the longest main-thread task meanwhile. */
async function costLessons(browser, backend) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => list.getEntries().forEach((e) => { window.__longest = Math.max(window.__longest, e.duration); }))
      .observe({ type: 'longtask', buffered: true });
  });
  const run = async (query, button) => {
    await page.goto(server.url + query);
    await page.waitForSelector(`[data-testid=${button}]:not([disabled])`, { timeout: 180_000 });
    await page.evaluate(() => { window.__longest = 0; });
    const t0 = Date.now();
    await page.click(`[data-testid=${button}]`);
    await page.waitForFunction((b) => !document.querySelector(`[data-testid=${b}]`).disabled, button, { timeout: 1_800_000 });
    return { secs: (Date.now() - t0) / 1000, longest: await page.evaluate(() => window.__longest) };
  };
  const pd = await run('?widget=prefill-decode&max_tokens=32', 'time-generation');
  const rows = await page.$$eval('[data-testid=cost-row]', (rs) => rs.map((r) => `${r.querySelector('th').textContent} ${r.querySelector('[data-col=cold]').textContent} | ${r.querySelector('[data-col=warm]').textContent}`));
  console.log(`${backend}: prefill-decode (32 tokens, cold | warm): ${rows.join('; ')} — ${pd.secs.toFixed(1)} s, longest task ${pd.longest.toFixed(0)} ms`);
  const curve = await run('?widget=prefill-decode&prefill=token-by-token', 'measure-curve');
  const fits = await page.$$eval('[data-testid=curve-fit]', (e) => e.map((x) => x.textContent));
  console.log(`${backend}: TTFT vs prompt length: ${fits.join('; ')} — ${curve.secs.toFixed(1)} s, longest task ${curve.longest.toFixed(0)} ms`);
  const kv = await run('?widget=kv-cache&up_to=64', 'measure-kv');
  const kvFits = await page.$$eval('[data-testid=kv-fit]', (e) => e.map((x) => x.textContent));
  const badge = await page.textContent('[data-testid=kv-check]');
  const steps = await page.$$eval('[data-testid=kv-per-step] .series.cached circle title', (e) => e.map((x) => Number(x.textContent.split('→ ')[1])));
  const at = (n) => steps[n - 1]?.toFixed(2);
  console.log(`${backend}: kv-cache to n = 64: ${kvFits.join('; ')}; cached step at n = 16: ${at(16)} ms, n = 64: ${at(64)} ms; ${badge} — ${kv.secs.toFixed(1)} s, longest task ${kv.longest.toFixed(0)} ms`);
  const batch = await run('?widget=batching&max_tokens=32', 'measure-batch');
  const batchRows = await page.$$eval('[data-testid=batch-row]', (rs) => rs.map((r) => {
    const c = [...r.children].map((x) => x.textContent);
    return `B=${c[0]}: ${c[1]} → ${c[2]} tokens/s (${c[3]}), ${c[4]} ms/step, ${c[6]}`;
  }));
  const passes = await page.$$eval('[data-testid=pass-row]', (rs) => rs.map((r) => `${r.children[0].textContent}: ${r.children[1].textContent} ms`));
  const verdict = await page.textContent('[data-testid=batch-verdict]');
  console.log(`${backend}: batching (32 tokens each): ${batchRows.join('; ')}; per vector in a pass of ${passes.join(', ')}; ${verdict} — ${batch.secs.toFixed(1)} s, longest task ${batch.longest.toFixed(0)} ms`);
  await page.close();
}
await server.close();

const weigh = (files) => files.reduce(([r, g], f) => { const b = readFileSync(f); return [r + b.length, g + gzipSync(b, { level: 9 }).length]; }, [0, 0]);
const kib = ([r, g]) => `${(r / 1024).toFixed(0)} KiB raw, ${(g / 1024).toFixed(0)} KiB gzip`;
const top = readdirSync(dist).map((f) => join(dist, f));
const model = readdirSync(join(dist, 'models/shakespeare')).map((f) => join(dist, 'models/shakespeare', f));
const app = (f) => !f.includes('cpu_worker');
console.log(`page weight: wasm ${kib(weigh(top.filter((f) => f.endsWith('.wasm') && app(f))))}; js ${kib(weigh(top.filter((f) => f.endsWith('.js') && app(f))))}; ` +
  `CPU worker (loaded without WebGPU) ${kib(weigh(top.filter((f) => !app(f))))}; ` +
  `model ${kib(weigh(model.filter((f) => !f.endsWith('.png') && !f.endsWith('.md'))))}`);

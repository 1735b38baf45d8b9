// The "inside the model" lessons as a reader runs them (figures only, no
// asserts), for tests/e2e/bench.mjs: the attention maps grown live to the
// whole context (n = 255) by Generate and watch, hovering rows and switching
// heads there; the beam tree at its widest and longest (B = 8, 48 steps) and
// re-ranking by the length penalty. Each with the longest main-thread task.

const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function insideTheModel(browser, backend, url) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => list.getEntries().forEach((e) => { window.__longest = Math.max(window.__longest, e.duration); }))
      .observe({ type: 'longtask', buffered: true });
  });
  const longest = () => page.evaluate(() => { const l = window.__longest; window.__longest = 0; return l; });
  const idle = (button) => page.waitForFunction((b) => !document.querySelector(`[data-testid=${b}]`).disabled, button, { timeout: 3_600_000 });

  // Attention: a 2-token prompt grown by 253 greedy tokens to the model's 255 + 1 positions.
  await page.goto(`${url}?widget=attention&prompt=ROMEO.%0A&max_tokens=253`);
  await page.waitForSelector('[data-testid=watch-attention]:not([disabled])', { timeout: 180_000 });
  await idle('read-attention');
  // Hovering and switching heads at the prompt's n first: what the harness itself adds.
  const interact = async () => {
    const n = await page.locator('[data-testid=att-token]').count();
    const box = await page.locator('[data-testid=att-heatmap]').boundingBox();
    await longest();
    const hovers = [];
    for (let i = 0; i < 60; i++) {
      const t = performance.now();
      await page.mouse.move(box.x + box.width / 2, box.y + ((i * 4 + 0.5) % n / n) * box.height);
      await frame(page);
      hovers.push(performance.now() - t);
    }
    const hoverLongest = await longest();
    const switches = [];
    const thumbs = await page.locator('[data-testid=att-thumb]').count();
    for (let i = 0; i < Math.min(thumbs, 16); i++) {
      const t = performance.now();
      await page.locator('[data-testid=att-thumb]').nth(i).click();
      await frame(page);
      switches.push(performance.now() - t);
    }
    return `at n = ${n}: hover a row → next frame ${median(hovers).toFixed(1)} ms (median of 60, longest task ${hoverLongest.toFixed(0)} ms), `
      + `switch head → next frame ${median(switches).toFixed(1)} ms (median of ${switches.length}, longest task ${(await longest()).toFixed(0)} ms)`;
  };
  const small = await interact();
  let t0 = Date.now();
  await page.click('[data-testid=watch-attention]');
  await page.waitForSelector('[data-testid=att-progress]', { timeout: 60_000 });
  await idle('watch-attention');
  const watch = (Date.now() - t0) / 1000;
  const watchLongest = await longest();
  const n = await page.locator('[data-testid=att-token]').count();
  const large = await interact();
  console.log(`${backend}: attention grown to n = ${n} by Generate and watch: ${watch.toFixed(1)} s (longest task ${watchLongest.toFixed(0)} ms); ${small}; ${large}`);

  // The beam tree at its widest and longest, then re-ranked.
  await page.goto(`${url}?widget=beam-tree&beams=8&max_tokens=48&ends_at=end-of-text`);
  await page.waitForSelector('[data-testid=run-beams]:not([disabled])', { timeout: 180_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=beam-sampled]')?.textContent, null, { timeout: 600_000 });
  await longest();
  t0 = Date.now();
  await page.click('[data-testid=run-beams]');
  await page.waitForFunction(() => !document.querySelector('[data-testid=beam-sampled]')?.textContent, null, { timeout: 60_000 }).catch(() => {});
  await page.waitForFunction(() => document.querySelector('[data-testid=beam-sampled]')?.textContent, null, { timeout: 3_600_000 });
  const search = (Date.now() - t0) / 1000;
  const searchLongest = await longest();
  const nodes = await page.locator('[data-testid=beam-node]').count();
  const cost = await page.textContent('[data-testid=beam-cost]');
  const reranks = [];
  for (const p of ['0', '0.5', '1.5', '2', '-1', '1']) {
    t0 = performance.now();
    await page.fill('[data-testid=length-penalty]', p);
    await frame(page);
    reranks.push(performance.now() - t0);
  }
  console.log(`${backend}: beam tree B = 8, 48 steps (search and the sampled text): ${search.toFixed(1)} s, ${nodes} nodes, longest task ${searchLongest.toFixed(0)} ms; `
    + `re-rank on a length-penalty change → next frame ${median(reranks).toFixed(1)} ms (longest task ${(await longest()).toFixed(0)} ms); ${cost}`);
  await page.close();
}

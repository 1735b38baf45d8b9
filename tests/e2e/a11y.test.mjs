// Accessibility audit in real headless Chromium on both engines: axe-core
// (WCAG 2.0/2.1 A and AA rules) over the playground and every widget of the
// widget table on the CPU engine, once each page is ready (asserted: an error
// page would pass the audit) and again after each one's main action (the
// table's `action`: Generate, Measure, a control moved…), in the state the
// action leaves, and that state then fits 320 px (reflow); on WebGPU over
// the playground here, and over every widget where widgets.test.mjs loads it
// (one page load per widget and backend: a WebGPU page costs seconds of
// shader compiling on CI's software GPU).
// Prints the violations per route and state by impact and rule; fails on
// any serious or critical one.
// Run by `./tools/dev test` (AXE_CORE: axe.min.js, installed by tools/setup.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, noFatal, cliGreedy, audit, WIDGET_TABLE } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

// The playground (its main action: Generate), then every widget of the table.
const ROUTES = [{ name: '/', query: '', action: { press: 'generate', fill: null } },
  ...WIDGET_TABLE.map((w) => ({ name: w.name, query: `?widget=${w.name}`, action: w.action }))];
// Small runs for the actions: the audit needs the state they leave, not long measurements.
const SMALL = 'max_tokens=8&heldout_tokens=64&up_to=24&requests=3';

/** Does `action` on `page` and waits until the page is idle again. */
async function act(page, action) {
  if (action.set) {
    await page.fill(`[data-testid=${action.set}]`, String(action.to));
    await page.dispatchEvent(`[data-testid=${action.set}]`, 'input');
  } else {
    if (action.fill) await page.fill(`[data-testid=${action.fill[0]}]`, action.fill[1]);
    await page.click(`[data-testid=${action.press}]`);
  }
  // The status says "generating" while a job runs; give it a moment to say so.
  await page.waitForTimeout(300);
  await page.waitForFunction(() => document.querySelector('[data-testid=status]').dataset.state === 'ready'
    && !document.querySelector('[data-testid=stop-generation]:enabled'), null, { timeout: 300_000 });
}

/** Audits `page`; prints its counts; returns its serious and critical violations, named. */
async function findings(page, what) {
  const violations = await audit(page);
  const count = (impact) => violations.filter((v) => v.impact === impact).reduce((s, v) => s + v.nodes, 0);
  const rules = violations.map((v) => `${v.id}×${v.nodes} (${v.impact})`).join(', ');
  console.log(`a11y ${what}: critical ${count('critical')}, serious ${count('serious')}, moderate ${count('moderate')}, minor ${count('minor')}${rules ? ` — ${rules}` : ''}`);
  return violations.filter((v) => ['serious', 'critical'].includes(v.impact))
    .map((v) => `${what}: ${v.id} (${v.impact}) on ${v.targets.join(' | ')}`);
}

for (const backend of ['cpu', 'webgpu']) {
  const acting = backend === 'cpu';
  test(`axe on ${backend}: the playground${acting ? ' and every widget, ready and after its main action' : ' (its widgets: in their load test)'}, no serious or critical violation`, async () => {
    const bad = [];
    for (const route of acting ? ROUTES : ROUTES.slice(0, 1)) {
      const query = acting ? `${route.query}${route.query ? '&' : '?'}${SMALL}` : route.query;
      const page = await lab.open(backend, query);
      assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready', `${route.name} on ${backend} reached ready`);
      bad.push(...await findings(page, `${backend} ${route.name}`));
      if (acting) {
        const start = Date.now();
        await act(page, route.action);
        console.log(`a11y ${route.name}: its action took ${((Date.now() - start) / 1000).toFixed(1)} s`);
        const errors = await page.$$eval('[data-testid=error]', (es) => es.map((e) => e.textContent));
        assert.deepEqual(errors, [], `${route.name}: its action ended without an error`);
        bad.push(...await findings(page, `${backend} ${route.name} after ${route.action.set ? `setting ${route.action.set}` : route.action.press}`));
        // Reflow (WCAG 1.4.10): what the action drew (tables, charts, strips) fits 320 px
        // without the page scrolling sideways; wide content scrolls inside its own box.
        await page.setViewportSize({ width: 320, height: 900 });
        await page.waitForTimeout(100);
        const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        if (over > 0) bad.push(`${backend} ${route.name} after its action: ${over} px too wide at 320 px`);
      }
      await noFatal(page);
      await page.close();
    }
    assert.deepEqual(bad, []);
  });
}

/** Presses Tab until `selector` has the focus; returns how many presses it took. */
async function tabTo(page, selector, most = 150) {
  for (let n = 1; n <= most; n++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return n;
  }
  throw new Error(`Tab never reached ${selector}`);
}

test('keyboard only on cpu: type a prompt, generate the CLI\'s greedy text, then pick the next token as the sampler', async () => {
  const page = await lab.open('cpu', '?temperature=0&max_tokens=8');
  await tabTo(page, '[data-testid=prompt]');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('ROMEO:');
  // Data-flow order: the prompt comes before the button that runs it.
  await tabTo(page, '[data-testid=generate]', 10);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.querySelector('[data-testid=generate]').disabled
    && document.querySelectorAll('.chip').length === 8, null, { timeout: 120_000 });
  assert.equal(await page.textContent('[data-testid=output]'), cliGreedy(8, 'ROMEO:'));
  // You are the sampler: a bar's button, reached by Tab, pressed with Space.
  await tabTo(page, '.bar-pick');
  const token = await page.evaluate(() => document.activeElement.closest('[data-testid=bar]').dataset.token);
  await page.keyboard.press('Space');
  await page.waitForFunction(() => document.querySelectorAll('.chip').length === 9);
  assert.equal(await page.$$eval('.chip', (cs) => cs.at(-1).textContent), token);
  await noFatal(page);
  await page.close();
});

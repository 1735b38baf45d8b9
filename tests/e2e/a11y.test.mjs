// Accessibility audit in real headless Chromium on both engines: axe-core
// (WCAG 2.0/2.1 A and AA rules) over the playground and every widget of the
// widget table, once each, after the page is ready. Prints the violations
// per route by impact and rule; fails on any serious or critical one. The
// states after a measurement are audited where a test already measures
// (`noSeriousA11y`: batching, serving, speculative), sharing their page loads.
// Run by `./tools/dev test` (AXE_CORE: axe.min.js, installed by tools/setup.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, noFatal, cliGreedy, audit, WIDGET_TABLE } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

const ROUTES = ['', ...WIDGET_TABLE.map((w) => `?widget=${w.name}`)];

for (const backend of ['cpu', 'webgpu']) {
  test(`axe on ${backend}: the playground and every widget, no serious or critical violation`, async () => {
    const bad = [];
    for (const route of ROUTES) {
      const page = await lab.open(backend, route);
      const violations = await audit(page);
      const count = (impact) => violations.filter((v) => v.impact === impact).reduce((s, v) => s + v.nodes, 0);
      const rules = violations.map((v) => `${v.id}×${v.nodes} (${v.impact})`).join(', ');
      console.log(`a11y ${backend} ${route || '/'}: critical ${count('critical')}, serious ${count('serious')}, moderate ${count('moderate')}, minor ${count('minor')}${rules ? ` — ${rules}` : ''}`);
      for (const v of violations.filter((v) => ['serious', 'critical'].includes(v.impact))) {
        bad.push(`${route || '/'}: ${v.id} (${v.impact}) on ${v.targets.join(' | ')}`);
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

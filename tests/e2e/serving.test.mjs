// End-to-end test of the serving lessons in real headless Chromium on both
// engines. `serving`: one trace under the three schedulers, a Gantt chart
// each (one slot row one at a time), the figures, every request's text
// equal to its run alone and to the CLI's `serve-sim` on the same trace.
// `speculative`: the greedy text equals the CLI's plain greedy text, α and
// the expected tokens per pass agree, each round drawn. Stop and the URL
// round-trip once each (on the CPU engine). Run by `./tools/dev test`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { startLab, noFatal, noSeriousA11y, DIST, ARTIFACTS } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

const CLI = process.env.CLI || 'target/release/decode-lab';
const MODEL = () => resolve(DIST, 'models/shakespeare');
/** The page's trace draws from its prompt, then these (engine::serve::PROMPTS). */
const BUILT_IN = ['ROMEO:\n', 'JULIET:\nO Romeo,', 'To be, or not to be', 'KING HENRY:\n'];

/** The CLI's `serve-sim` texts (request i's, without its prompt) on the page's trace. */
function cliServe(prompt, { requests, rate, slots, tokens, seed }) {
  const prompts = [prompt, ...BUILT_IN].flatMap((p) => ['--prompt', p]);
  const out = execFileSync(CLI, [
    'serve-sim', '--model', MODEL(), '--backend', 'cpu', '--scheduler', 'continuous',
    '--rate', String(rate), '--requests', String(requests), '--slots', String(slots),
    '--max-tokens', String(tokens), '--seed', String(seed), '--temperature', '0.8', '--top-k', '40', ...prompts,
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const parts = out.split(/^\[request \d+, arrives at step \d+, seed \d+\] (✓|✗[^\n]*)\n/m);
  // [head, mark0, body0, mark1, body1, …]; each body is its prompt, its text and a newline.
  const texts = [];
  for (let i = 1; i < parts.length; i += 2) {
    assert.equal(parts[i], '✓', 'the CLI served every request its run alone');
    texts.push(parts[i + 1].replace(/\n$/, ''));
  }
  return texts;
}

/** The CLI's plain greedy continuation of `prompt`, without the prompt. */
function cliGreedy(prompt, tokens) {
  const out = execFileSync(CLI, [
    'generate', '--model', MODEL(), '--prompt', prompt, '--backend', 'cpu',
    '--temperature', '0', '--max-tokens', String(tokens),
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.slice(prompt.length).replace(/\n$/, '');
}

const idle = (b) => !document.querySelector(`[data-testid=${b}]`).disabled
  && document.querySelector('[data-testid=stop-generation]').disabled;

const TRACE = { requests: 5, rate: 1, slots: 3, tokens: 6, seed: 4 };
const SERVE = `?widget=serving&prompt=ROMEO%3A&requests=${TRACE.requests}&rate=${TRACE.rate}&slots=${TRACE.slots}&max_tokens=${TRACE.tokens}&seed=${TRACE.seed}`;
const SPEC = '?widget=speculative&prompt=ROMEO%3A&max_tokens=20&speculate=3&draft_layers=2';

for (const backend of ['cpu', 'webgpu']) {
  test(`serving on ${backend}: three schedulers on one trace, Gantt charts, figures, texts equal their runs alone and the CLI`, async () => {
    const page = await lab.open(backend, SERVE);
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    assert.equal(await page.locator('[data-testid=arrival]').count(), 0, 'the trace is drawn when served');
    await page.click('[data-testid=measure-serve]');
    await page.waitForFunction(idle, 'measure-serve', { timeout: 300_000 });
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    assert.equal(await page.locator('[data-testid=arrival]').count(), TRACE.requests);
    const rows = await page.$$eval('[data-testid=serve-row]', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    assert.deepEqual(rows.map((r) => r[0]), ['one at a time', 'static', 'continuous']);
    for (const r of rows) {
      assert.ok(Number(r[1]) > 0, `tokens/s measured: ${r}`);
      assert.match(r[3], /^\d+\.\d \/ \d+\.\d \/ \d+\.\d$/, `first token in steps: ${r}`);
      assert.match(r[7], r[0] === 'one at a time' ? /^\d+ % of 1$/ : /^\d+ % of 3$/);
      assert.equal(r[9], '✓ all');
    }
    const steps = rows.map((r) => Number(r[2]));
    assert.ok(steps[2] < steps[0], `continuous batching takes fewer steps than one at a time: ${steps}`);
    // One slot's row one at a time, B rows otherwise; every cell one of the four kinds.
    const gantts = await page.$$eval('[data-testid=gantt]', (gs) => gs.map((g) => [g.dataset.scheduler,
      new Set([...g.querySelectorAll('.cell rect')].map((r) => r.getAttribute('y'))).size,
      g.querySelectorAll('.cell.prefill').length, g.querySelectorAll('.cell.decode').length]));
    assert.deepEqual(gantts.map((g) => g.slice(0, 2)), [['one at a time', 1], ['static', 3], ['continuous', 3]]);
    for (const g of gantts) assert.equal(g[2], TRACE.requests, `one prefill per request: ${g}`);
    // Each chart's text alternative holds the same cells.
    const asTable = await page.$$eval('[data-testid=gantt]', (gs) => gs.map((g) =>
      [...g.querySelectorAll('[data-testid=chart-table] td')].filter((c) => c.textContent.startsWith('prefill')).length));
    assert.deepEqual(asTable, [TRACE.requests, TRACE.requests, TRACE.requests]);
    const texts = await page.$$eval('[data-testid=serve-text]', (ls) => ls.map((l) => [l.dataset.same, l.querySelector('.text').textContent]));
    assert.equal(texts.length, TRACE.requests);
    assert.ok(texts.every(([same]) => same === 'true'));
    const prompts = ['ROMEO:', ...BUILT_IN];
    const cli = cliServe('ROMEO:', TRACE).map((t, i) => t.slice(prompts[i % prompts.length].length));
    assert.deepEqual(texts.map(([, t]) => t), cli);
    await page.screenshot({ path: `${ARTIFACTS}/serving-${backend}.png`, fullPage: true });
    await noSeriousA11y(page, `serving on ${backend}, served`);
    await noFatal(page);
    await page.close();
  });

  test(`speculative on ${backend}: the greedy text is the CLI's plain greedy text, α and tokens per pass agree, rounds drawn`, async () => {
    const page = await lab.open(backend, SPEC);
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    await page.click('[data-testid=measure-spec]');
    await page.waitForFunction(idle, 'measure-spec', { timeout: 300_000 });
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    assert.equal(await page.textContent('[data-testid=spec-text]'), cliGreedy('ROMEO:', 20));
    const row = await page.$eval('[data-testid=spec-row]', (r) => [r.dataset.same, ...[...r.children].map((c) => c.textContent)]);
    assert.equal(row[0], 'true');
    assert.deepEqual(row.slice(1, 3), ['3', '2']);
    const alpha = Number(row[3]);
    assert.ok(alpha >= 0 && alpha <= 1, `α ${alpha}`);
    const expected = alpha < 1 ? (1 - alpha ** 4) / (1 - alpha) : 4;
    assert.ok(Math.abs(Number(row[5]) - expected) < 0.02, `expected from α: ${row[5]} vs ${expected}`);
    assert.match(row[9], /^\d+\.\d\d×$/);
    // Each round: K drafted (fewer only at the end), kept ≤ drafted; α is kept over
    // judged (the drafts up to and including the first rejection).
    const rounds = await page.$$eval('[data-testid=spec-round]', (rs) => rs.map((r) => [Number(r.dataset.accepted), Number(r.dataset.drafted)]));
    assert.ok(rounds.length > 0);
    assert.ok(rounds.every(([a, d]) => a <= d && d <= 3));
    const kept = rounds.reduce((s, [a]) => s + a, 0);
    const judged = rounds.reduce((s, [a, d]) => s + Math.min(a + 1, d), 0);
    assert.ok(Math.abs(kept / judged - alpha) < 0.001, `α = kept / judged: ${kept}/${judged} vs ${alpha}`);
    // Each round's chips: its kept drafts, then (unless all were kept) one rejected.
    const kinds = await page.$$eval('[data-testid=spec-round]', (rs) => rs.map((r) => [...r.querySelectorAll('.spec-chip')].map((c) => c.dataset.kind)));
    kinds.forEach((k, i) => {
      const [a, d] = rounds[i];
      assert.deepEqual(k.slice(0, a), Array(a).fill('accepted'));
      assert.equal(k.at(-1), a === d ? 'bonus' : 'correction');
      if (a < d) assert.equal(k[a], 'rejected');
    });
    assert.match(await page.textContent('[data-testid=spec-verdict]'), /^K = 3: a round took \d+\.\d\d ms/);
    await page.screenshot({ path: `${ARTIFACTS}/speculative-${backend}.png`, fullPage: true });
    await noSeriousA11y(page, `speculative on ${backend}, measured`);
    await noFatal(page);
    await page.close();
  });
}

test('serving and speculative on cpu: Stop mid-measurement, URL round-trip', async () => {
  const page = await lab.open('cpu', `${SERVE}&slots=2&static_wait=7`);
  await page.click('[data-testid=copy-embed]');
  const src = (await page.inputValue('[data-testid=embed-code]')).match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
  for (const kv of ['widget=serving', 'slots=2', 'static_wait=7', 'requests=5']) assert.ok(src.includes(kv), `${kv} in ${src}`);
  await page.fill('[data-testid=max-tokens]', '120');
  await page.fill('[data-testid=requests]', '30');
  await page.click('[data-testid=measure-serve]');
  await page.waitForFunction(() => document.querySelector('[data-testid=serve-progress]'), null, { timeout: 60_000 });
  await page.click('[data-testid=stop-generation]');
  await page.waitForFunction(idle, 'measure-serve', { timeout: 300_000 });
  assert.ok(await page.locator('[data-testid=serve-row]').count() < 3, 'stopped before every scheduler ran');
  // A typed trace: a bad line is named; two requests of 2 and 6 tokens in a
  // static batch of 2 hold the short one's slot 4 steps after it ended.
  await page.selectOption('[data-testid=scheduler]', 'static');
  await page.fill('[data-testid=trace]', '0 0 2 1; 0 1 6 2; 1 9 2 3');
  await page.click('[data-testid=measure-serve]');
  await page.waitForFunction(idle, 'measure-serve', { timeout: 60_000 });
  assert.match(await page.textContent('[data-testid=error]'), /^trace line 3: there are 5 prompts: "1 9 2 3"$/);
  await page.fill('[data-testid=trace]', '0 0 2 1; 0 1 6 2');
  await page.click('[data-testid=measure-serve]');
  await page.waitForFunction(idle, 'measure-serve', { timeout: 120_000 });
  const typed = await page.$$eval('[data-testid=serve-row]', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
  assert.deepEqual(typed.map((r) => [r[0], r[8], r[9]]), [['static', '4', '✓ all']]);
  assert.equal(await page.locator('[data-testid=gantt] .cell.wasted').count(), 4);
  await noFatal(page);
  await page.close();

  const spec = await lab.open('cpu', `${SPEC}&draft_layers=40`);
  assert.equal(await spec.inputValue('[data-testid=draft-layers]'), '40');
  await spec.fill('[data-testid=max-tokens]', '200');
  await spec.click('[data-testid=measure-spec-sweep]');
  await spec.waitForFunction(() => document.querySelectorAll('[data-testid=spec-round]').length > 2, null, { timeout: 120_000 });
  await spec.click('[data-testid=stop-generation]');
  await spec.waitForFunction(idle, 'measure-spec', { timeout: 300_000 });
  assert.equal(await spec.locator('[data-testid=spec-row]').count(), 0, 'stopped inside the first run');
  // The bundled model's blocks less one: draft_layers=40 was cut, with the notice.
  assert.match(await spec.textContent('[data-testid=run-notice]'), /draft_layers is kept within this model's blocks less one/);
  await noFatal(spec);
  await spec.close();
});

// End-to-end test of the beam-tree lesson in real headless Chromium on both
// engines: the tree's steps hold 2·B candidates with B kept, the best path
// equals the CLI's `generate --beams`, the sampled text equals the CLI's
// sampled run, the length penalty re-ranks without a new search, width 1 is
// greedy, the cost strip counts fewer copies than forking every child, and
// the embed code round-trips.
// Run by `./tools/dev test` next to widgets.test.mjs (same environment).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { startLab, noFatal, DIST, ARTIFACTS } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

/** The CLI's stdout for `generate` with these flags (the trailing newline dropped). */
function cli(prompt, flags) {
  const out = execFileSync(process.env.CLI || 'target/release/decode-lab', [
    'generate', '--model', resolve(DIST, 'models/shakespeare'), '--prompt', prompt, '--backend', 'cpu', ...flags,
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.slice(0, -1);
}

const PROMPT = 'ROMEO.\n';

async function searched(page) {
  await page.waitForFunction(() => document.querySelector('[data-testid=beam-sampled]')?.textContent
    && !document.querySelector('[data-testid=run-beams]').disabled, null, { timeout: 300_000 });
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
}

const nodes = (page) => page.$$eval('[data-testid=beam-node]', (ns) => ns.map((n) => ({
  step: Number(n.dataset.step), rank: Number(n.dataset.rank), fate: n.dataset.fate,
  best: n.classList.contains('best'), cumulative: Number(n.dataset.cumulative),
})));
const hyps = (page) => page.$$eval('[data-testid=beam-hyp]', (rs) => rs.map((r) => ({
  tokens: r.dataset.tokens, score: Number(r.dataset.score), length: Number(r.children[3].textContent),
})));

for (const backend of ['cpu', 'webgpu']) {
  test(`beam-tree on ${backend}: 2·B candidates a step, best path = CLI --beams, sampled = CLI, re-ranking, width 1 = greedy, cost, URL round-trip`, async () => {
    const page = await lab.open(backend, '?widget=beam-tree&beams=3&max_tokens=10&ends_at=line&seed=4');
    await searched(page);
    const all = await nodes(page);
    const steps = Math.max(...all.map((n) => n.step)) + 1;
    assert.ok(steps >= 2, `${steps} steps`);
    for (let s = 0; s < steps; s++) {
      const col = all.filter((n) => n.step === s);
      assert.equal(col.length, 6, `step ${s}: 2·B candidates`);
      assert.ok(col.filter((n) => n.fate === 'kept').length <= 3);
      for (let r = 1; r < col.length; r++) assert.ok(col[r - 1].cumulative >= col[r].cumulative, 'ranked best first');
    }
    assert.ok(all.some((n) => n.fate === 'finished'), 'a line ended a hypothesis');
    assert.ok(all.some((n) => n.fate === 'pruned'));
    assert.ok(all.filter((n) => n.best).length >= 1, 'the best path is drawn');
    // The best hypothesis is the CLI's beam search; the sampled text the CLI's sampled run.
    const best = await page.textContent('[data-testid=beam-best]');
    assert.equal(best, cli(PROMPT, ['--beams', '3', '--max-tokens', '10', '--ends-at', 'line']));
    const sampled = await page.textContent('[data-testid=beam-sampled]');
    assert.equal(sampled, cli(PROMPT, ['--max-tokens', '10', '--seed', '4', '--top-k', '40', '--temperature', '0.8']));
    // Cost: the prefill plus batched steps; fewer bytes copied than forking every child.
    const cost = await page.$eval('[data-testid=beam-cost]', (e) => ({ ...e.dataset }));
    assert.ok(Number(cost.passes) >= 2 && Number(cost.passes) <= steps);
    assert.ok(Number(cost.copyBytes) < Number(cost.forkBytes), JSON.stringify(cost));
    // Click a node: its figures and text.
    await page.click('[data-testid=beam-node][data-step="1"][data-rank="0"]');
    assert.match(await page.textContent('[data-testid=beam-chosen]'), /^Step 2, rank 1 of 6: .* log p = -?\d+\.\d{4}, cumulative/);
    // The same with the keyboard: a node takes the focus and Enter reads it.
    await page.focus('[data-testid=beam-node][data-step="0"][data-rank="1"]');
    await page.keyboard.press('Enter');
    assert.match(await page.textContent('[data-testid=beam-chosen]'), /^Step 1, rank 2 of 6: /);
    // The tree as a table: one row per candidate, each with the node's log p.
    const table = await page.$$eval('.beam-tree [data-testid=chart-table] tbody tr',
      (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    const drawn = await nodes(page);
    assert.equal(table.length, drawn.length);
    table.forEach((r, i) => assert.ok(Math.abs(Number(r[6]) - drawn[i].cumulative) <= 5e-5 + 1e-9, `candidate ${i}`));
    // Re-rank: penalty 0 ranks by the sum (the shortest likely line first); no new search runs.
    const before = await hyps(page);
    assert.ok(new Set(before.map((h) => h.length)).size > 1, 'hypotheses of several lengths');
    await page.fill('[data-testid=length-penalty]', '0');
    await page.waitForSelector('[data-testid=beam-reranked]');
    const after0 = await hyps(page);
    assert.equal(after0.length, before.length);
    for (let i = 1; i < after0.length; i++) assert.ok(after0[i - 1].score >= after0[i].score, 'sorted by the new score');
    assert.equal(await page.$eval('[data-testid=beam-cost]', (e) => e.dataset.passes), cost.passes, 'no new search');
    await page.screenshot({ path: `${ARTIFACTS}/beam-tree-${backend}.png`, fullPage: true });

    await page.fill('[data-testid=beams]', '4');
    await page.click('[data-testid=copy-embed]');
    const code = await page.inputValue('[data-testid=embed-code]');
    const src = code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
    for (const p of [/widget=beam-tree/, /beams=4/, /length_penalty=0/, /ends_at=line/, /max_tokens=10/]) assert.match(src, p);
    await noFatal(page);
    await page.close();
    const again = await lab.openLink(src);
    assert.equal(await again.inputValue('[data-testid=beams]'), '4');
    assert.equal(await again.inputValue('[data-testid=length-penalty]'), '0');
    await searched(again);
    await noFatal(again);
    await again.close();

    // Width 1 is greedy decoding.
    const one = await lab.open(backend, '?widget=beam-tree&beams=1&max_tokens=12&ends_at=end-of-text');
    await searched(one);
    const greedy = cli(PROMPT, ['--temperature', '0', '--max-tokens', '12']);
    assert.equal(await one.textContent('[data-testid=beam-best]'), greedy);
    const ones = await nodes(one);
    assert.ok(ones.every((n) => n.rank <= 1), 'B = 1: two candidates a step');
    await noFatal(one);
    await one.close();
  });
}

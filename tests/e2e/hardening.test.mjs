// Hardening end to end in real headless Chromium: every control of the one
// table in the page and the URL, stop strings as the CLI ends them, the
// context-crop notice, generated hostile query strings (100; 500 under soak), garbage messages
// posted to an embed. Every page runs under the strict CSP of server.mjs.
// Run by `./tools/dev test` with the other e2e files (same environment).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, waitSettled, watchCsp, noFatal, set, generate, cliGreedy, WIDGET_TABLE } from './helpers.mjs';

const lab = await startLab();
let server;
before(async () => { server = await lab.start(); });
after(() => lab.stop());

/** Every control the page shows, as the page describes it (derived from the table, not a copy of it). */
async function controlsOf(page) {
  return page.$$eval('[data-control]', (els) => els.map((el) => {
    const slider = el.querySelector('input[type=range]');
    return {
      name: el.dataset.control,
      testid: el.querySelector('[data-testid]')?.dataset.testid,
      number: !!slider,
      min: slider && Number(slider.min), max: slider && Number(slider.max), step: slider && Number(slider.step),
      help: el.title,
      spoken: slider?.getAttribute('aria-valuetext'),
      marks: el.querySelector('.marks')?.textContent,
      marksShown: !!el.querySelector('.marks')?.getClientRects().length,
      describedBy: el.querySelector('input[type=number]')?.getAttribute('aria-describedby'),
      marksId: el.querySelector('.marks')?.id,
    };
  }));
}

for (const backend of ['webgpu', 'cpu']) {
  test(`${backend}: every control is in the page and the URL, with a test id from its name`, async () => {
    const page = await lab.open(backend);
    const controls = await controlsOf(page);
    const names = controls.map((c) => c.name);
    for (const name of ['frequency_penalty', 'presence_penalty', 'no_repeat_ngram', 'repetition_penalty', 'stop']) {
      assert.ok(names.includes(name), `${name} is a control of the playground`);
    }
    controls.forEach((c) => assert.equal(c.testid, c.name.replaceAll('_', '-'), c.name));
    // What a marked value means stands under the label, not only in the tooltip (a touch screen
    // shows none): each piece of it is its help's own words, the number box is described by it,
    // and the slider says it while sitting there.
    const marked = controls.filter((c) => c.marks);
    assert.deepEqual(marked.map((c) => c.name), ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty',
      'frequency_penalty', 'presence_penalty', 'no_repeat_ngram']);
    for (const c of marked) {
      assert.ok(c.marksShown, `${c.name}'s marks are shown`);
      c.marks.split(', ').forEach((m) => assert.ok(c.help.includes(m), `${c.name}: "${m}" is in its help "${c.help}"`));
      assert.equal(c.describedBy, c.marksId, c.name);
    }
    const topK = controls.find((c) => c.name === 'top_k');
    assert.equal(topK.marks, '0 = off');
    assert.equal(topK.spoken, 'Top-k 0 (off)');
    assert.equal(controls.find((c) => c.name === 'temperature').spoken, 'Temperature 0.80');
    // A value two thirds of the way up each range (a third would leave the repetition penalty at its neutral 1), snapped to its step, for every number control.
    const want = {};
    for (const c of controls.filter((c) => c.number)) {
      want[c.name] = String(Number((Math.round((c.min + (c.max - c.min) * 2 / 3) / c.step) * c.step).toFixed(6)));
    }
    want.stop = 'nurse';
    const q = new URLSearchParams({ ...want, prompt: 'Romeo.\n' });
    await page.close();
    const again = await lab.open(backend, `?${q}`);
    for (const [name, value] of Object.entries(want)) {
      const got = await again.inputValue(`[data-testid=${name.replaceAll('_', '-')}]`);
      assert.equal(Number(got) || got, Number(value) || value, name);
    }
    assert.equal(await again.locator('[data-testid=url-notices]').count(), 0, 'in-range values need no notice');
    assert.equal(await again.getAttribute('[data-control=top_k] input[type=range]', 'aria-valuetext'), `Top-k ${want.top_k}`);
    // Penalties on: the strip names each processor and what it changed.
    await again.waitForSelector('[data-testid=pipeline-strip] [data-processor=frequency_penalty]');
    const strip = await again.$$eval('[data-testid=pipeline-strip] [data-processor]', (els) => els.map((e) => e.dataset.processor));
    assert.deepEqual(strip, ['repetition_penalty', 'frequency_penalty', 'presence_penalty', 'no_repeat_ngram']);
    assert.equal(await again.locator('[data-testid=pipeline-strip] [data-stage=stop]').count(), 1);
    await again.waitForFunction((keys) => keys.every((k) => location.search.includes(`${k}=`)), Object.keys(want));
    await noFatal(again);
    await again.close();
  });
}

test('a stop string ends the text where the CLI ends it, and its tokens leave the output', async () => {
  const free = cliGreedy(40);
  // A stop string from the middle of the greedy text: the page must end exactly where the CLI does.
  const stop = free.slice(20, 24);
  const want = cliGreedy(40, 'ROMEO:\n', ['--stop', stop]);
  assert.ok(want.length < free.length, `the stop string ${JSON.stringify(stop)} cuts the text`);
  for (const backend of ['webgpu', 'cpu']) {
    const page = await lab.open(backend);
    await set(page, 'prompt', 'ROMEO:\n');
    await set(page, 'temperature', 0);
    await set(page, 'max-tokens', 40);
    await set(page, 'stop', stop);
    assert.equal(await generate(page), want, backend);
    await noFatal(page);
    await page.close();
  }
});

test('device loss mid-generation: the page carries on on the CPU engine, in its worker, with the text a CPU-only run writes', async () => {
  const q = '?test_hooks=1&prompt=ROMEO%3A&temperature=1&top_k=40&seed=11&max_tokens=40';
  const cpu = await lab.open('cpu', q);
  const want = await generate(cpu);
  await cpu.close();
  const page = await lab.open('webgpu', q);
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'webgpu');
  await page.click('[data-testid=generate]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=output] .chip').length >= 10);
  // The worker starts from the files in Cache Storage: nothing is downloaded again.
  const weights = '/models/shakespeare/model.safetensors';
  const fetched = server.requests.get(weights);
  await page.evaluate(() => window.decodeLabTest.loseGpuDevice());
  await page.waitForSelector('[data-testid=backend][data-backend=cpu]', { timeout: 60_000 });
  await page.waitForSelector('[data-testid=backend][data-cpu-thread=worker]', { timeout: 60_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=status]').dataset.state === 'ready'
    && !document.querySelector('[data-testid=generate]').disabled, null, { timeout: 120_000 });
  assert.equal(await page.inputValue('[data-testid=prompt]'), 'ROMEO:', 'the prompt stays');
  assert.equal(await page.textContent('[data-testid=output]'), want);
  assert.match(await page.textContent('.banner'), /the GPU device was lost/);
  assert.equal(server.requests.get(weights), fetched, 'the weights were read from the cache');
  await noFatal(page);
  await page.close();
});

test('a config.json error names config.json, not the weights file', async () => {
  const page = await lab.open('cpu', '?model=broken/neox/');
  const text = await page.textContent('[role=alert]');
  assert.match(text, /broken\/neox\/config\.json: config\.json: `model_type` is "gpt_neox": Decode Lab runs GPT-2 \("gpt2"\) and the Llama family/);
  assert.doesNotMatch(text, /model\.safetensors/);
  await noFatal(page);
  await page.close();
});

test('generating past the context crops it with a notice', async () => {
  const page = await lab.open('cpu');
  await set(page, 'temperature', 0);
  await set(page, 'max-tokens', 270); // the bundled model's context is 256 positions
  await generate(page);
  assert.match(await page.textContent('[data-testid=run-notice]'), /the context is full: the model now sees the last \d+ tokens/);
  await noFatal(page);
  await page.close();
});

/** A seeded stream of hostile values (splitmix-style, same on every run). */
function hostile(seed) {
  let s = BigInt(seed);
  const next = () => {
    s = (s + 0x9E3779B97F4A7C15n) & 0xFFFFFFFFFFFFFFFFn;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & 0xFFFFFFFFFFFFFFFFn;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & 0xFFFFFFFFFFFFFFFFn;
    return Number((z ^ (z >> 31n)) % 1000000n);
  };
  const atoms = ['1e308', '-1e308', 'NaN', 'Infinity', '-inf', '', '-0', '2.5', '99999999999', '0x10', ';;', '%', '🙂',
    'javascript:alert(1)', 'JaVaScRiPt:window.__pwned=1', 'blob:http://localhost/x', '<script>window.__pwned=1</script>', '"><img src=x onerror="window.__pwned=1">',
    'top_k:locked,bogus', 'none', '\u202e', '../../etc/passwd', '1,2,3,4,5,6'];
  const value = () => {
    const r = next() % 20;
    if (r === 0) return '9'.repeat(100_000);
    if (r === 1) return '<b>'.repeat(10_000);
    return atoms[next() % atoms.length];
  };
  return { next, value };
}

// Pages the hostile-query test loads: 50 in the test command (the parser
// itself is fuzzed natively: crates/contract/tests/url.rs and fuzz target
// url_query), 500 under `./tools/dev soak` (HOSTILE_PAGES=500).
const HOSTILE_PAGES = Number(process.env.HOSTILE_PAGES || 50);

test(`${HOSTILE_PAGES} generated hostile query strings: no panic, visible notices, no script runs, nothing leaves the origin`, async () => {
  const names = ['prompt', 'temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty', 'frequency_penalty',
    'presence_penalty', 'no_repeat_ngram', 'max_tokens', 'seed', 'bars', 'stop', 'controls', 'embed', 'backend', 'labels',
    'variant_a', 'variant_b', 'heldout_tokens', 'tensor', 'params_b', 'prefill', 'up_to', 'kv_layers', 'kv_heads', 'head_size', 'kv_bytes', 'context', 'batch', 'position', 'layer', 'att_layer', 'att_head', 'first_token', 'beams', 'length_penalty', 'prompt_in_length', 'ends_at', 'kernels', 'model'];
  const widgets = [...WIDGET_TABLE.map((w) => w.name), 'bogus'];
  const h = hostile(16);
  const context = await (await lab.browser('cpu')).newContext();
  const page = await context.newPage();
  await watchCsp(page);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const origin = new URL(server.url).origin;
  const outside = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin && !url.startsWith('data:')) {
      outside.push(url);
      return route.abort();
    }
    return route.continue();
  });
  const started = Date.now();
  for (let i = 0; i < HOSTILE_PAGES; i++) {
    const q = new URLSearchParams();
    q.append('widget', widgets[h.next() % widgets.length]);
    for (let n = 1 + (h.next() % 6); n > 0; n--) q.append(names[h.next() % names.length], h.value());
    q.append('temperature', 'NaN'); // at least one value that must be refused with a notice
    // Most pages use an author's logits (no model load); every 25th loads the model.
    if (i % 25) q.append('logits', h.next() % 5 ? '3,2,1,0.5' : h.value());
    await page.goto(`${server.url}?${q}`);
    await waitSettled(page);
    assert.equal(await page.locator('[data-testid=fatal]').count(), 0, `panic on ?${q.toString().slice(0, 300)}`);
    const notices = await page.$$eval('.url-notices li', (els) => els.map((e) => e.textContent));
    assert.ok(notices.some((n) => n.includes('temperature')), `the NaN temperature is noticed (${i})`);
    notices.forEach((n) => assert.ok(n.length < 400, `a notice of ${n.length} characters`));
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no injected script ran');
    assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no CSP violation');
  }
  assert.deepEqual(errors, []);
  assert.deepEqual(outside, [], 'no request left the origin');
  console.log(`${HOSTILE_PAGES} hostile pages in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await context.close();
});

test('an embed posts its height to its parent only, and ignores garbage messages', async () => {
  const page = await (await lab.browser('webgpu')).newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // A same-origin parent with no other embeds: course-note.html's own iframes
  // would post their heights into the listener too.
  await page.goto(`${server.url}parent.html`);
  await page.evaluate((src) => {
    window.__messages = [];
    addEventListener('message', (e) => window.__messages.push({ data: e.data, fromFrame: e.source === document.getElementById('probe').contentWindow }));
    const frame = document.createElement('iframe');
    frame.id = 'probe';
    frame.src = src;
    frame.style.width = '400px';
    document.body.append(frame);
  }, `${server.url}?widget=top-k&logits=3,2,1&embed=1`);
  const frame = page.frameLocator('#probe');
  await frame.locator('[data-testid=status][data-state=ready]').waitFor({ timeout: 60_000 });
  await page.waitForFunction(() => window.__messages.length > 0);
  const messages = await page.evaluate(() => window.__messages);
  messages.forEach((m) => {
    assert.ok(m.fromFrame, 'only the embed posts');
    assert.equal(m.data.type, 'decode-lab:height');
    assert.ok(Number.isInteger(m.data.height) && m.data.height > 0);
    assert.equal(m.data.widget, 'top-k');
  });
  const barsBefore = await frame.locator('[data-testid=bar]').count();
  await page.evaluate(() => {
    const w = document.getElementById('probe').contentWindow;
    const garbage = [null, 'decode-lab:height', { type: 'decode-lab:height', height: 'NaN' }, { type: 'decode-lab:set', temperature: 9 },
      { toString: null }, 'x'.repeat(1_000_000), new ArrayBuffer(4_000_000), [1, [2, [3]]], { __proto__: { polluted: 1 } }];
    garbage.forEach((g) => w.postMessage(g, '*'));
  });
  await page.waitForTimeout(500);
  assert.equal(await frame.locator('[data-testid=status]').getAttribute('data-state'), 'ready');
  assert.equal(await frame.locator('[data-testid=bar]').count(), barsBefore, 'nothing changed');
  assert.equal(await frame.locator('[data-testid=fatal]').count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

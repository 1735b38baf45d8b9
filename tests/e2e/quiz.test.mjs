// End-to-end test of the quiz widget in real headless Chromium on both
// engines: the course's questions answered right and wrong, each answer
// against an independent computation (the exact softmax here; for the live
// model, transformers' answer from tools/golden/make_quiz_golden.py, and the
// CLI's `sample --model --prompt` for a top question), the answer marked in the
// revealed bars. On the CPU engine once: the tolerance's edge, a hostile
// question text rendered inert, a `top` question, the builder and the URL
// round-trip. Run by `./tools/dev test`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startLab, noFatal, noSeriousA11y, DIST, ARTIFACTS } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

const CLI = process.env.CLI || 'target/release/decode-lab';
// The quiz's model questions answered by Hugging Face transformers (tools/golden/make_quiz_golden.py).
const GOLDEN = JSON.parse(readFileSync(new URL('../fixtures/golden/quiz.json', import.meta.url), 'utf8'));

/** The CLI's pipeline on the bundled model's next token after `prompt`. */
function cliSample(prompt, flags = []) {
  return JSON.parse(execFileSync(CLI, ['sample', '--model', resolve(DIST, 'models/shakespeare'),
    '--prompt', prompt, '--backend', 'cpu', '--json', ...flags], { encoding: 'utf8' }));
}

const card = (page, i) => page.locator('[data-testid=quiz-question]').nth(i);

/** Types `answer` into question i, checks it, returns its state (right / wrong). */
async function answer(page, i, value) {
  const c = card(page, i);
  await c.locator('[data-testid=quiz-answer]').fill(String(value));
  await c.locator('[data-testid=quiz-check]').click();
  await page.waitForFunction((i) => document.querySelectorAll('[data-testid=quiz-question]')[i].dataset.state !== 'open', i);
  return c.getAttribute('data-state');
}

const softmaxTop = (logits, t) => {
  const e = logits.map((l) => Math.exp(l / t));
  return e[0] / e.reduce((a, b) => a + b, 0);
};

for (const backend of ['cpu', 'webgpu']) {
  test(`quiz on ${backend}: the course's questions, right and wrong, checked against an independent answer`, async () => {
    const page = await lab.open(backend, '?widget=quiz');
    assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), backend);
    await page.waitForSelector('[data-testid=status][data-state=ready]');
    const kinds = await page.$$eval('[data-testid=quiz-question]', (cs) => cs.map((c) => c.dataset.kind));
    assert.deepEqual(kinds, ['prob', 'prob', 'count', 'greedy', 'cost']);
    // T = 1: p_top = e^3 / Σ e^z = 0.6097; the revealed bars mark that token with that p.
    const t1 = softmaxTop([3, 2, 1, 0.5, 0.1], 1);
    assert.equal(await answer(page, 0, t1.toFixed(2)), 'right');
    const marked = await card(page, 0).locator('[data-testid=bar][data-answer=true]').evaluateAll((bs) => bs.map((b) => [b.dataset.token, Number(b.dataset.p)]));
    assert.equal(marked.length, 1);
    assert.equal(marked[0][0], 'the');
    assert.ok(Math.abs(marked[0][1] - t1) < 1e-6, `${marked[0][1]} vs ${t1}`);
    assert.match(await card(page, 0).locator('[data-testid=quiz-worked]').textContent(), /e\^\(3\/1\)/);
    // T = 0.5: the T = 1 answer is wrong, then the right one (0.8595) is right.
    const t05 = softmaxTop([3, 2, 1, 0.5, 0.1], 0.5);
    assert.equal(await answer(page, 1, t1.toFixed(2)), 'wrong');
    assert.match(await card(page, 1).locator('[data-testid=quiz-solution]').textContent(), new RegExp(`^${t05.toFixed(2)} `));
    assert.equal(await answer(page, 1, `${(t05 * 100).toFixed(1)}%`), 'right');
    // The nucleus on the live model's confident step: transformers' count
    // (TopPLogitsWarper on GPT2LMHeadModel, tools/golden/make_quiz_golden.py),
    // which the CLI, our own engine natively, also gives.
    const nucleus = GOLDEN.nucleus;
    assert.equal(cliSample(GOLDEN.prompt, ['--top-p', String(GOLDEN.top_p)]).stages[3].kept_count, nucleus);
    assert.equal(await answer(page, 2, nucleus + 1), 'wrong');
    assert.equal(await answer(page, 2, nucleus), 'right');
    assert.equal(await card(page, 2).locator('[data-testid=bar][data-answer=true]').count(), nucleus);
    assert.equal(await card(page, 2).locator('[data-testid=bar][data-kept=true]').count(), nucleus);
    // Greedy is top-k at k = 1 (and at no other k); no cache: exponent 2.
    assert.equal(await answer(page, 3, 2), 'wrong');
    assert.equal(await answer(page, 3, 1), 'right');
    assert.equal(await card(page, 3).locator('[data-testid=quiz-solution]').textContent(), 'top_k = 1');
    assert.equal(await answer(page, 4, 1), 'wrong');
    assert.equal(await answer(page, 4, 2), 'right');
    await page.screenshot({ path: `${ARTIFACTS}/quiz-${backend}.png`, fullPage: true });
    await noSeriousA11y(page, `quiz on ${backend}, answered`);
    await noFatal(page);
    await page.close();
  });
}

test('quiz on cpu: tolerance edge, hostile text inert, a top question, the builder, URL round-trip', async () => {
  const hostile = '<img src=x onerror="window.__pwned=1">';
  const prompt = 'ROMEO:\nRomeo, Romeo';
  const q = new URLSearchParams({
    widget: 'quiz',
    'q1.kind': 'prob', 'q1.logits': '1,1', 'q1.tol': '0.05', 'q1.ask': hostile, 'q1.hint': hostile,
    'q2.kind': 'top', 'q2.prompt': prompt, 'q2.presence_penalty': '2',
  });
  const page = await lab.open('cpu', `?${q}`);
  await page.waitForSelector('[data-testid=status][data-state=ready]');
  assert.equal(await card(page, 0).locator('[data-testid=quiz-ask]').textContent(), hostile);
  assert.equal(await page.locator('.quiz img').count(), 0);
  // p = 0.5 exactly, tolerance 0.05: the edge is right, past it wrong.
  assert.equal(await answer(page, 0, '0.55'), 'right');
  assert.equal(await answer(page, 0, '0.5501'), 'wrong');
  assert.equal(await answer(page, 0, '0.45'), 'right');
  await card(page, 0).locator('[data-testid=quiz-answer]').fill('half');
  await card(page, 0).locator('[data-testid=quiz-check]').click();
  assert.equal(await card(page, 0).getAttribute('data-state'), 'open', 'no verdict on an unreadable answer');
  assert.match(await card(page, 0).locator('[data-testid=quiz-verdict]').textContent(), /is not a number/);
  // top: the CLI's most likely token under the same penalty is the right choice.
  const cli = cliSample(prompt, ['--presence-penalty', '2']);
  const top = cli.final.indexOf(Math.max(...cli.final));
  const choices = await card(page, 1).locator('[data-testid=quiz-choice]').evaluateAll((cs) => cs.map((c) => Number(c.dataset.id)));
  assert.ok(choices.includes(top), `${top} among ${choices}`);
  const wrong = choices.find((id) => id !== top);
  await card(page, 1).locator(`[data-testid=quiz-choice][data-id="${wrong}"]`).check();
  await card(page, 1).locator('[data-testid=quiz-check]').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=quiz-question]')[1].dataset.state === 'wrong');
  await card(page, 1).locator(`[data-testid=quiz-choice][data-id="${top}"]`).check();
  await card(page, 1).locator('[data-testid=quiz-check]').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=quiz-question]')[1].dataset.state === 'right');
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  // The builder adds a question the link then carries.
  await page.click('[data-testid=quiz-builder] summary');
  await page.selectOption('[data-testid=builder-kind]', 'count');
  await page.fill('[data-testid=builder-logits]', '2,1,0,-1');
  await page.fill('[data-testid=builder-top-p]', '0.9');
  await page.click('[data-testid=builder-add]');
  assert.equal(await page.locator('[data-testid=quiz-question]').count(), 3);
  assert.equal(await answer(page, 2, 3), 'right');
  await page.fill('[data-testid=builder-logits]', '1,nope');
  await page.click('[data-testid=builder-add]');
  assert.match(await page.textContent('[data-testid=builder-said]'), /“nope” is not a number/);
  assert.equal(await page.locator('[data-testid=quiz-question]').count(), 3);
  await card(page, 0).locator('[data-testid=quiz-remove]').click();
  assert.equal(await page.locator('[data-testid=quiz-question]').count(), 2);
  await page.click('[data-testid=copy-embed]');
  const src = (await page.inputValue('[data-testid=embed-code]')).match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
  const asks = await page.$$eval('[data-testid=quiz-ask]', (as) => as.map((a) => a.textContent));
  await noFatal(page);
  await page.close();
  const again = await lab.openLink(src);
  await again.waitForSelector('[data-testid=status][data-state=ready]');
  assert.deepEqual(await again.$$eval('[data-testid=quiz-ask]', (as) => as.map((a) => a.textContent)), asks);
  assert.deepEqual(await again.$$eval('[data-testid=quiz-question]', (cs) => cs.map((c) => c.dataset.kind)), ['top', 'count']);
  assert.equal(await answer(again, 1, 3), 'right');
  // The embed code's link is embedded: the quiz is the learner's, no builder, no Remove.
  assert.match(src, /embed=1/);
  assert.equal(await again.locator('[data-testid=quiz-builder]').count(), 0);
  assert.equal(await again.locator('[data-testid=quiz-remove]').count(), 0);
  await noFatal(again);
  await again.close();
});

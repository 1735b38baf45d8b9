// The on-device self-test (`?selftest=1`) in real headless Chromium: on the
// WebGPU adapter (SwiftShader) every kernel and the whole model pass and the
// report can be copied; a kernel corrupted through the test hook
// (`test_hooks=1&selftest_fault=NAME`) fails, and the page runs on the CPU
// engine with that reason; without WebGPU the panel says there is no GPU to test.
// Run by `./tools/dev test` with the other e2e files (same environment).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, noFatal, generate, cliGreedy, set, defaultLimits, DEFAULT_LIMITS } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

/** Every kernel row of the panel: name → pass. */
async function kernelRows(page) {
  return Object.fromEntries(await page.$$eval('[data-testid=selftest] tr[data-kernel]',
    (rows) => rows.map((r) => [r.dataset.kernel, r.dataset.pass === 'true'])));
}

/** Eight greedy tokens from the page equal the CLI's. */
async function greedy8(page) {
  await set(page, 'prompt', 'ROMEO:\n');
  await set(page, 'temperature', 0);
  await set(page, 'max-tokens', 8);
  assert.equal(await generate(page), cliGreedy(8));
}

// The cpu profile's kernels (SwiftShader is a CPU; the Llama family's rms_norm, rope, swiglu, rms_qkv and rms_swiglu
// among them), the device probe's and the greedy step's argmax.
const KERNELS = ['embedding', 'layernorm', 'matmul', 'ln_qkv', 'rms_qkv', 'kv_write', 'attention', 'attention_probs', 'kv_mass', 'kv_renumber', 'matvec_residual', 'ln_fc_gelu', 'rms_swiglu', 'gelu', 'rms_norm', 'rope', 'swiglu', 'lm_head', 'residual_add', 'block_sum', 'argmax'];

// Under the WebGPU spec's default limits (helpers.mjs's `defaultLimits`), as
// a modest laptop's browser offers: Chromium enforces them on every pipeline
// and binding, so a kernel that needs more fails here. The adapter's own
// limits (SwiftShader's 1 GiB bindings) meet every kernel in the next test,
// where all but the faulted one pass.
test('webgpu, default limits: ?selftest=1 passes every kernel and the model, and copies a plain-text report', async () => {
  const page = await lab.open('webgpu', '?selftest=1', undefined, defaultLimits);
  // The device the page opened has the defaults, not SwiftShader's own.
  const seen = await page.evaluate(async () => (await navigator.gpu.requestAdapter()).limits.maxStorageBufferBindingSize);
  assert.equal(seen, DEFAULT_LIMITS.maxStorageBufferBindingSize);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  const panel = page.locator('[data-testid=selftest]');
  assert.equal(await panel.getAttribute('data-result'), 'pass', await page.inputValue('[data-testid=selftest-report]'));
  assert.deepEqual(await kernelRows(page), Object.fromEntries(KERNELS.map((k) => [k, true])));
  assert.equal(await page.getAttribute('[data-testid=selftest-model]', 'data-pass'), 'true');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'webgpu');
  const report = await page.inputValue('[data-testid=selftest-report]');
  console.log(report.split('\n').map((l) => `# ${l}`).join('\n'));
  assert.match(report, /^Decode Lab self-test: PASS\nadapter: .*\nkernels: the cpu profile\n/);
  assert.match(report, new RegExp(`maxStorageBufferBindingSize: ${DEFAULT_LIMITS.maxStorageBufferBindingSize}\\b`));
  assert.match(report, new RegExp(`maxStorageBuffersPerShaderStage: ${DEFAULT_LIMITS.maxStorageBuffersPerShaderStage}\\b`));
  assert.match(report, /model \(16 greedy steps, f16 weights, GPU vs CPU engine\): pass/);
  assert.match(report, /browser: Mozilla/);
  assert.equal(report.split('\n').filter((l) => l.startsWith('  pass ')).length > 40, true);
  await page.click('[data-testid=copy-report]');
  await page.waitForSelector('.selftest [role=status]');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), report);
  // The page then works as usual, on the GPU.
  await greedy8(page);
  await noFatal(page);
  await page.close();
});

test('webgpu: a wrong kernel fails the self-test and the page runs on the CPU engine with the reason', async () => {
  const page = await lab.open('webgpu', '?selftest=1&test_hooks=1&selftest_fault=attention');
  assert.equal(await page.getAttribute('[data-testid=selftest]', 'data-result'), 'fail');
  const rows = await kernelRows(page);
  assert.equal(rows.attention, false);
  assert.deepEqual(Object.keys(rows).filter((k) => !rows[k]), ['attention']);
  assert.match(await page.textContent('[data-testid=selftest-verdict]'), /attention kernel wrong on this GPU.*CPU engine instead/);
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'cpu');
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-cpu-thread'), 'worker');
  assert.match(await page.textContent('.banner .reason'), /self-test found the attention kernel wrong/);
  assert.match(await page.inputValue('[data-testid=selftest-report]'), /^Decode Lab self-test: FAIL\n[\s\S]*FAIL attention /);
  await greedy8(page);
  await noFatal(page);
  await page.close();
});

test('cpu: with no WebGPU the self-test says there is no GPU to test', async () => {
  const page = await lab.open('cpu', '?selftest=1');
  assert.equal(await page.getAttribute('[data-testid=selftest]', 'data-result'), 'no-gpu');
  assert.match(await page.inputValue('[data-testid=selftest-report]'), /^Decode Lab self-test: no GPU engine/);
  assert.equal(await page.getAttribute('[data-testid=backend]', 'data-backend'), 'cpu');
  await noFatal(page);
  await page.close();
});

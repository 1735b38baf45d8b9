// The device report (widget `device`) in real headless Chromium on both
// engines: the load by part, then Measure times each kernel profile the
// chooser would try here (SwiftShader is a CPU: the cpu profile alone; no
// WebGPU: the CPU worker), the read rate and the kernels in use; Copy report
// gives the same JSON the page shows. With report= the page measures as it
// loads and POSTs the report to the page's own origin (the test server takes
// it); another origin is refused with a notice and nothing leaves.
// Run by `./tools/dev test`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, noFatal } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

const idle = (page) => page.waitForFunction(() => !document.querySelector('[data-testid=measure-device]').disabled
  && document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 300_000 });

/** The report the page shows, parsed. */
const shown = async (page) => JSON.parse(await page.inputValue('[data-testid=device-report]'));

for (const backend of ['webgpu', 'cpu']) {
  test(`device on ${backend}: the load by part, each profile timed, the read rate, the kernels, Copy report`, async () => {
    const page = await lab.open(backend, '?widget=device');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    const ready = Number(await page.getAttribute('[data-testid=device-load]', 'data-ready-at'));
    assert.ok(ready > 0, `ready at ${ready} ms`);
    // No controls to show: no empty panel for them, and the figures take the whole width.
    assert.equal(await page.locator('.device > .controls').count(), 0);
    const [editor, panel] = await Promise.all(['.device > .editor', '.device > .panel'].map((s) => page.locator(s).boundingBox()));
    assert.ok(Math.abs(panel.x - editor.x) < 1 && panel.width > 0.9 * editor.width, JSON.stringify({ editor, panel }));
    await page.click('[data-testid=measure-device]');
    await page.waitForSelector('[data-testid=device-report]', { timeout: 300_000 });
    await idle(page);
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    const report = await shown(page);
    assert.equal(report.backend, backend);
    const parts = ['probe_ms', 'download_ms', 'prepare_ms', 'engine_ms'];
    parts.forEach((p) => assert.ok(report.load[p] >= 0, `${p}: ${report.load[p]}`));
    assert.ok(parts.reduce((s, p) => s + report.load[p], 0) <= report.load.ready_at_ms, 'the parts fit in the time to ready');
    assert.ok(report.first_token_ms > 0);
    // SwiftShader is a CPU: the chooser would time the cpu profile alone; without WebGPU, the worker.
    const want = backend === 'webgpu' ? ['cpu'] : ['CPU (wasm, worker)', 'CPU (wasm, 2 workers)'];
    assert.equal(report.profiles.length, 1);
    assert.ok(want.includes(report.profiles[0].profile), report.profiles[0].profile);
    for (const p of report.profiles) {
      assert.equal(p.error, null);
      assert.ok(p.prefill_ms_per_token > 0 && p.decode_ms_per_token > 0, JSON.stringify(p));
      assert.equal(p.prefill_tokens, 32);
      assert.equal(p.decode_steps, 16);
      if (backend === 'webgpu') assert.ok(p.pipelines_ms >= 0);
    }
    const rows = await page.$$eval('[data-testid=device-profile]', (rs) => rs.map((r) => r.dataset.profile));
    assert.deepEqual(rows, report.profiles.map((p) => p.profile));
    assert.ok(report.device.read_bytes_per_s > 0 && report.device.copy_bytes_per_s > 0);
    assert.equal(report.kernels, backend === 'webgpu' ? 'cpu (the adapter is a CPU)' : null);
    assert.match(await page.textContent('[data-testid=device-kernels]'), backend === 'webgpu' ? /Kernels in use: cpu/ : /CPU engine runs/);
    assert.equal(report.model.params > 0 && report.model.format.length > 0, true);
    await page.click('[data-testid=copy-device-report]');
    assert.deepEqual(JSON.parse(await page.evaluate(() => navigator.clipboard.readText())), report);
    // On a phone's width the tables scroll in their own boxes: the page itself does not.
    await page.setViewportSize({ width: 390, height: 900 });
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0);
    await noFatal(page);
    await page.close();
  });
}

test('device on cpu: report= measures as the page loads and POSTs the report to the page\'s own origin; another origin is refused', async () => {
  const before = lab.server.reports.length;
  const page = await lab.open('cpu', '?widget=device&report=%2Fdevice-report');
  await page.waitForSelector('[data-testid=device-sent]', { timeout: 300_000 });
  assert.match(await page.textContent('[data-testid=device-sent]'), /sent to http:\/\/127\.0\.0\.1:\d+\/device-report \(HTTP 204\)/);
  assert.equal(lab.server.reports.length, before + 1);
  const posted = lab.server.reports.at(-1);
  assert.equal(posted.type, 'application/json');
  assert.deepEqual(JSON.parse(posted.body), await shown(page));
  await noFatal(page);
  await page.close();

  const outside = [];
  const away = await lab.open('cpu', '?widget=device&report=https%3A%2F%2Fcollector.example%2Fin');
  away.on('request', (r) => { if (!r.url().startsWith(lab.server.url)) outside.push(r.url()); });
  await away.waitForSelector('[data-testid=error]', { timeout: 60_000 });
  assert.match(await away.textContent('[data-testid=error]'), /sent only to this page's own origin .* not to https:\/\/collector\.example/);
  assert.equal(await away.locator('[data-testid=device-report]').count(), 0, 'nothing measured, nothing to send');
  assert.deepEqual(outside, []);
  assert.equal(lab.server.reports.length, before + 1);
  await noFatal(away);
  await away.close();
});
